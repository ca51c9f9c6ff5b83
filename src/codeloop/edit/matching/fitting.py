"""Fitting the replacement's new lines to the file: whitespace, quotes and indentation."""

from __future__ import annotations

from codeloop.edit.matching.base import LEVELS, Candidate
from codeloop.edit.normalize import (
    LineFix,
    aligned_prefix,
    columns,
    fit_indent,
    identity,
    lead,
    structural,
    trailing_fix,
    unicode_fix,
)


def fixer(level: int, pairs: list[tuple[str, str]]) -> LineFix | None:
    """The fix-up applied to new lines given the level and the aligned (search, file) lines."""
    fixes: list[LineFix] = [trailing_fix(pairs)]
    if level >= LEVELS.index("indentation"):
        nonblank = [p for p in pairs if p[0].strip()]
        reindent = (fit_indent(nonblank) or fit_indent(structural(nonblank))) if pairs else identity
        if reindent is None:
            return None
        fixes.append(reindent)
    if level >= LEVELS.index("unicode"):
        fixes.insert(0, unicode_fix(pairs))
    fixes = [f for f in fixes if f is not identity]
    if not fixes:
        return identity

    def fix(line: str) -> str:
        for f in fixes:
            line = f(line)
        return line

    return fix


def fix_new(cand: Candidate, R: list[str], j: int, out: list[str]) -> str:
    """A new line fitted to the file.

    Under a scaled indent (say 2 -> 4 spaces), a continuation line the model aligned under
    the previous line's open bracket is aligned under the same bracket in the file's text.
    """
    line = cand.fix(R[j])
    width = columns(lead(R[j]))
    if cand.levels is not None and out and j > 0 and width not in cand.levels:
        theirs = aligned_prefix(R[j - 1])
        ours = aligned_prefix(out[-1])
        if theirs is not None and ours is not None and columns(theirs) == width:
            return ours + line.lstrip()
    return line
