"""Settling a level's candidates: one place, picked by anchors, a line hint or end of file."""

from __future__ import annotations

from codeloop.edit.errors import AmbiguousMatch
from codeloop.edit.matching.base import MAX_SHOWN, Candidate, Edit
from codeloop.edit.matching.document import Document, anchor_lines
from codeloop.edit.normalize import key_fold

# A line-number hint settles an ambiguity when one candidate is nearest to it and this close
# (after the shift of earlier hunks): a looser hint once picked a duplicate block nearby.
HINT_SLACK = 1


def ambiguous(path: str, lines: list[int], level: str) -> AmbiguousMatch:
    shown = ", ".join(map(str, lines[:MAX_SHOWN])) + (" ..." if len(lines) > MAX_SHOWN else "")
    return AmbiguousMatch(
        f"the search text matches {len(lines)} places in {path} ({level} match) at lines {shown}",
        "add surrounding lines to the search text so it matches one place, or set replace_all",
        lines,
    )


def choose(doc: Document, cands: list[Candidate], edit: Edit, level: str, path: str) -> Candidate:
    """The one candidate the edit singles out; raise AmbiguousMatch when it does not."""
    if len(cands) == 1:
        return cands[0]
    pool = cands
    if edit.anchors:
        pos = _anchor_position(doc, edit.anchors)
        # The anchor precedes the change, which may put it inside the search's own context.
        after = [c for c in pool if pos is not None and c.end >= pos]
        pool = after or pool
    if len(pool) > 1 and edit.hint_line is not None:
        hint = edit.hint_line - 1
        near = sorted(pool, key=lambda c: abs(c.start - hint))
        best = abs(near[0].start - hint)
        if best <= HINT_SLACK and abs(near[1].start - hint) > best:
            pool = near[:1]
    if len(pool) > 1 and edit.at_eof:
        pool = [c for c in pool if c.end == len(doc.lines)] or pool
    if len(pool) == 1:
        return pool[0]
    raise ambiguous(path, [c.start + 1 for c in pool], level)


def _anchor_position(doc: Document, anchors: tuple[str, ...]) -> int | None:
    """The line after the anchors, each sought after the previous one; None if one is missing."""
    pos = 0
    for anchor in anchors:
        want = key_fold(anchor)
        if not want:
            continue
        found = (i + 1 for i in anchor_lines(doc, key_fold, want)
                 if i >= pos and key_fold(doc.lines[i]).startswith(want))
        pos = next(found, -1)
        if pos < 0:
            return None
    return pos
