"""The elision level: search text with `...` lines standing for code left out."""

from __future__ import annotations

import itertools

from codeloop.edit.errors import AmbiguousMatch, BadReplacement
from codeloop.edit.matching.base import LEVELS, MAX_SHOWN, Candidate, Span
from codeloop.edit.matching.blank_lines import Placement, aligned_candidate, piece_matches
from codeloop.edit.matching.document import Document
from codeloop.edit.normalize import key_fold

ELISION_MARKERS = frozenset({"...", "…", "# ...", "// ...", "/* ... */", "# …"})


def is_marker(line: str) -> bool:
    return line.strip() in ELISION_MARKERS


def elision(doc: Document, S: list[str], R: list[str]) -> list[Candidate]:
    markers = [i for i, s in enumerate(S) if is_marker(s)]
    if not markers:
        return []
    if sum(map(is_marker, R)) != len(markers):
        raise BadReplacement(
            "the search text elides code with '...' but the replacement has a different number "
            "of '...' lines",
            "use one '...' line in the replacement for each '...' line in the search",
        )
    bounds = [-1, *markers, len(S)]
    pieces = [list(range(a + 1, b)) for a, b in itertools.pairwise(bounds)]
    pieces = [p for p in pieces if any(key_fold(S[i]) for i in p)]
    if not pieces:
        return []
    found = [piece_matches(doc, S, p) for p in pieces]
    if any(not f for f in found):
        return []
    chosen = _resolve_pieces(found)
    if chosen is None:
        return []
    align: dict[int, Span] = {}
    alt: dict[int, Span] = {}
    for piece in chosen:
        align.update(piece.align)
        alt.update(piece.alt)
    for m in markers:
        before = [c for c in chosen if max(c.align) < m]
        after = [c for c in chosen if min(c.align) > m]
        lo = before[-1].end if before else chosen[0].start
        hi = after[0].start if after else chosen[-1].end
        align[m] = alt[m] = (lo, hi)
    placed = Placement(chosen[0].start, chosen[-1].end, align, alt)
    cand = aligned_candidate(doc, S, R, placed, LEVELS.index("elision"))
    return [cand] if cand is not None else []


def _resolve_pieces(found: list[list[Placement]]) -> list[Placement] | None:
    """Pick one place per piece: unique outright, or unique between its placed neighbours."""
    placed: dict[int, Placement] = {k: f[0] for k, f in enumerate(found) if len(f) == 1}
    progress = True
    while progress and len(placed) < len(found):
        progress = False
        for k, options in enumerate(found):
            if k in placed:
                continue
            lo = max((placed[j].end for j in placed if j < k), default=0)
            hi = min((placed[j].start for j in placed if j > k), default=1 << 62)
            fits = [o for o in options if o.start >= lo and o.end <= hi]
            if not fits:
                return None
            if len(fits) == 1:
                placed[k] = fits[0]
                progress = True
    if len(placed) < len(found):
        k = min(set(range(len(found))) - placed.keys())
        raise AmbiguousMatch(
            f"a piece of the elided search text fits {len(found[k])} places "
            f"(lines {', '.join(str(o.start + 1) for o in found[k][:MAX_SHOWN])})",
            "add a line of context to each piece between '...' lines so it is unique",
            [o.start + 1 for o in found[k]],
        )
    chosen = [placed[k] for k in range(len(found))]
    if any(a.end > b.start for a, b in itertools.pairwise(chosen)):
        return None
    return chosen
