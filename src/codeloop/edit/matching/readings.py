"""Readings of an edit whose search text did not show every line of the file window it
matched (blank lines it lost or added, lines fuzzy matching skipped).

Where such unseen lines sit next to lines the edit changes, where they go is a guess:
before or after inserted lines, kept or deleted with the blank lines around them. The
edit is applied only when every reading gives the same text; otherwise it is refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from codeloop.edit.errors import AmbiguousWhitespace
from codeloop.edit.matching.base import Candidate, Span

# How many file lines around an unclear place the refusal shows.
SHOWN_AROUND = 2


@dataclass(frozen=True)
class Reading:
    """One way to place the unseen lines of a window."""

    # Pair the search's blank lines with the file's from the start of each blank run.
    from_start: bool = False
    # Where unseen lines go next to new lines: before an insertion and before a replaced
    # block's new lines, after them ("as_written"); before the lines of either ("first");
    # after them ("last"). A replaced block may hold lines inserted before or after the
    # lines that replace, so unseen lines next to it may go on either side of those.
    unseen: Literal["as_written", "first", "last"] = "as_written"
    # Unseen lines inside a deleted range: dropped ("mixed", also keeps those next to it),
    # kept ("keep"), or dropped with the blank lines next to a deleted blank line ("drop").
    deletion: Literal["mixed", "keep", "drop"] = "mixed"


AS_WRITTEN = Reading()
# The extremes: every unseen line as early as it can go, as late, and deleted where it can.
OTHER_READINGS = (
    Reading(unseen="first", deletion="keep"),
    Reading(from_start=True, unseen="last", deletion="keep"),
    Reading(deletion="drop"),
)


def covered(align: list[Span | None]) -> set[int]:
    """The file lines an alignment pairs with search lines."""
    return {i for span in align if span is not None for i in range(*span)}


def has_unseen(cand: Candidate) -> bool:
    """Whether the window has lines the search did not show, or the search lines the file
    does not have: only then can readings differ."""
    return (cand.alt_align is not None or None in cand.align
            or len(covered(cand.align)) < cand.end - cand.start)


def unclear(lines: list[str], cand: Candidate, S: list[str], path: str) -> AmbiguousWhitespace:
    """The refusal for an edit whose readings differ, naming the lines the search missed."""
    seen = covered(cand.align)
    unseen = [i for i in range(cand.start, cand.end) if i not in seen]
    if not unseen:  # the search has blank lines the file lacks
        unseen = [a for a, _ in filter(None, cand.align)] or [cand.start]
    first, last = unseen[0], unseen[-1]
    while first > cand.start and not lines[first - 1].strip() and not lines[first].strip():
        first -= 1
    while last + 1 < cand.end and not lines[last + 1].strip() and not lines[last].strip():
        last += 1
    where = f"line {first + 1}" if first == last else f"lines {first + 1}-{last + 1}"
    if all(not lines[i].strip() for i in range(first, last + 1)):
        theirs = _search_blanks(cand, S, first, last)
        what = (f"the search text does not match the blank lines of {path}: at {where} the file "
                f"has {last - first + 1} blank line{'s' if last > first else ''} where the search "
                f"text has {theirs}")
    else:
        what = f"the search text does not show {where} of {path}"
    lo, hi = max(0, first - SHOWN_AROUND), min(len(lines), last + SHOWN_AROUND + 1)
    excerpt = "\n".join(f"{i + 1:>5} | {lines[i]}" for i in range(lo, hi))
    return AmbiguousWhitespace(
        f"{what}, and the edit changes lines next to them, so where they belong in the result "
        f"cannot be told. The file there:\n{excerpt}",
        "copy the lines around the change exactly as the file has them, every blank line "
        "included, into both the search text and the replacement",
        list(range(first + 1, last + 2)),
    )


def _search_blanks(cand: Candidate, S: list[str], first: int, last: int) -> int:
    """How many blank lines the search has between its lines around file lines first..last."""
    before = [si for si, span in enumerate(cand.align) if span is not None and span[1] <= first]
    after = [si for si, span in enumerate(cand.align) if span is not None and span[0] > last]
    lo, hi = (before[-1] + 1 if before else 0), (after[0] if after else len(S))
    return sum(1 for si in range(lo, hi) if not S[si].strip())
