"""Writing an edit into the candidate window it matched: file lines kept, new lines fitted."""

from __future__ import annotations

import itertools

from codeloop.edit.brackets import Anchor, enclosing
from codeloop.edit.errors import BadReplacement
from codeloop.edit.indent import check_new_indent
from codeloop.edit.matching.base import Candidate, EditResult, Span
from codeloop.edit.matching.choose import ambiguous
from codeloop.edit.matching.diff import Opcode, core, opcodes, other_diffs
from codeloop.edit.matching.document import Document
from codeloop.edit.matching.elision import is_marker
from codeloop.edit.matching.fitting import fix_new
from codeloop.edit.matching.readings import (
    AS_WRITTEN,
    OTHER_READINGS,
    Reading,
    covered,
    has_unseen,
    unclear,
)


def apply_one(doc: Document, cand: Candidate, S: list[str], R: list[str], level: str,
              path: str = "the file") -> EditResult:
    new = _patch_checked(doc, cand, S, R, level, path)
    lines = doc.lines[:cand.start] + new + doc.lines[cand.end:]
    return EditResult(doc.render(lines), level, cand.start + 1, cand.end - cand.start, len(new))


def apply_all(doc: Document, cands: list[Candidate], S: list[str], R: list[str], level: str,
              path: str) -> EditResult:
    cands = sorted(cands, key=lambda c: c.start)
    if any(a.end > b.start for a, b in itertools.pairwise(cands)):
        raise ambiguous(path, [c.start + 1 for c in cands], f"{level}, overlapping")
    lines, added = list(doc.lines), 0
    for cand in reversed(cands):
        new = _patch_checked(doc, cand, S, R, level, path)
        lines[cand.start:cand.end] = new
        added += len(new)
    return EditResult(doc.render(lines), level, cands[0].start + 1,
                      sum(c.end - c.start for c in cands), added)


def _patch_checked(doc: Document, cand: Candidate, S: list[str], R: list[str], level: str,
                   path: str) -> list[str]:
    """The new lines for the window; refused when lines the search did not show could go
    elsewhere in them (see `readings`), or when new lines land off the file's indent grid."""
    if level == "exact":
        old = set(S)
        check_new_indent(lambda: doc.lines, R, [j for j, r in enumerate(R) if r not in old], path)
        return list(R)
    ops = opcodes(S, R, level == "elision")
    placed: dict[int, str] = {}
    new = _patch(doc, cand, S, R, level, ops, placed=placed)
    fresh = [j for tag, _, _, j1, j2 in ops if tag != "equal" for j in range(j1, j2)]
    check_new_indent(lambda: doc.lines, [placed.get(j, r) for j, r in enumerate(R)], fresh, path)
    if has_unseen(cand):
        diffs = [ops, *other_diffs(S, R, ops)]
        for diff, reading in itertools.product(diffs, (AS_WRITTEN, *OTHER_READINGS)):
            if (diff is not ops or reading is not AS_WRITTEN) and \
                    _patch(doc, cand, S, R, level, diff, reading) != new:
                raise unclear(doc.lines, cand, S, path)
    return new


def _patch(doc: Document, cand: Candidate, S: list[str], R: list[str], level: str,
           ops: list[Opcode], reading: Reading = AS_WRITTEN,
           placed: dict[int, str] | None = None) -> list[str]:
    """The new lines for the candidate's window: file lines where the edit keeps them.

    `placed` receives the output line of each replacement line (for aligning new lines
    under brackets, and for the caller's checks).
    """
    align = cand.alt_align if reading.from_start and cand.alt_align is not None else cand.align
    lines, out, p = doc.lines, [], cand.start
    placed = {} if placed is None else placed
    # Only a table-mapped indentation aligns continuation lines under their bracket.
    anchors: list[Anchor | None] = enclosing(R) if cand.fix.aligns else [None] * len(R)
    elided = level == "elision"
    for tag, i1, i2, j1, j2 in ops:
        if tag == "equal":
            for si in range(i1, i2):
                span = align[si]
                if span is not None:
                    out.extend(lines[p:span[1]])
                    p = max(p, span[1])
                    if span[1] - span[0] == 1:
                        placed[j1 + si - i1] = lines[span[0]]
            continue
        if elided and (any(is_marker(S[i]) for i in range(i1, i2))
                       or any(is_marker(R[j]) for j in range(j1, j2))):
            raise BadReplacement(
                "the '...' lines in the search and the replacement do not line up",
                "keep each '...' line at the same place in the search and the replacement",
            )
        spans = [s for s in (align[i] for i in range(i1, i2)) if s is not None]
        new = range(j1, j2)
        if spans:
            lo, hi = spans[0][0], spans[-1][1]
            if reading.deletion == "drop":
                lo, hi = _widen(lines, covered(align), lo, hi, p, cand.end)
            before = lines[p:lo]
            if reading.deletion == "keep":
                for a, b in itertools.pairwise(spans):
                    before.extend(lines[a[1]:b[0]])
            p = max(p, hi)
            if reading.unseen == "last":
                head = core(S[i1:i2], R[j1:j2])[0]
                _extend_new(cand, R, range(j1, j1 + head), placed, anchors, out)
                new = range(j1 + head, j2)
            out.extend(before)
            if reading.unseen == "first":
                tail = core(S[i1:i2], R[j1:j2])[1]
                nxt = next((s[0] for s in align[i2:] if s is not None), cand.end)
                _extend_new(cand, R, range(j1, j1 + tail), placed, anchors, out)
                out.extend(lines[p:nxt])
                p = max(p, nxt)
                new = range(j1 + tail, j2)
        elif reading.unseen == "first":
            nxt = next((s[0] for s in align[i1:] if s is not None), cand.end)
            out.extend(lines[p:nxt])
            p = max(p, nxt)
        _extend_new(cand, R, new, placed, anchors, out)
    out.extend(lines[p:cand.end])
    return out


def _extend_new(cand: Candidate, R: list[str], new: range, placed: dict[int, str],
                anchors: list[Anchor | None], out: list[str]) -> None:
    """Append replacement lines R[new], fitted to the file."""
    for j in new:
        placed[j] = fix_new(cand, R, j, placed, anchors)
        out.append(placed[j])


def _widen(lines: list[str], seen: set[int], lo: int, hi: int, p: int, end: int) -> Span:
    """A deleted range [lo, hi) grown over the unseen blank lines next to a deleted blank line."""
    if not lines[lo].strip():
        while lo - 1 >= p and lo - 1 not in seen and not lines[lo - 1].strip():
            lo -= 1
    if not lines[hi - 1].strip():
        while hi < end and hi not in seen and not lines[hi].strip():
            hi += 1
    return lo, hi
