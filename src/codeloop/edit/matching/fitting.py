"""Fitting the replacement's new lines to the file: whitespace, quotes and indentation."""

from __future__ import annotations

from codeloop.edit.brackets import Anchor, same_bracket
from codeloop.edit.indent import fit_indent
from codeloop.edit.matching.base import LEVELS, Candidate, Fit
from codeloop.edit.normalize import (
    LineFix,
    columns,
    identity,
    lead,
    trailing_fix,
    unicode_fix,
)


def fixer(level: int, pairs: list[tuple[str, str]]) -> Fit | None:
    """The fix-up applied to new lines given the level and the aligned (search, file) lines;
    None when no indentation rule maps the search's lines onto the file's."""
    fixes: list[LineFix] = [trailing_fix(pairs)]
    if level >= LEVELS.index("unicode"):
        fixes.insert(0, unicode_fix(pairs))
    reindent: LineFix = identity
    aligns = False
    if level >= LEVELS.index("indentation") and pairs:
        fitted = fit_indent([p for p in pairs if p[0].strip()])
        if fitted is None:
            return None
        reindent, aligns = fitted
    fixes = [f for f in fixes if f is not identity]

    def content(line: str) -> str:
        for f in fixes:
            line = f(line)
        return line

    return Fit(content if fixes else identity, reindent, aligns)


def fix_new(cand: Candidate, R: list[str], j: int, placed: dict[int, str],
            anchors: list[Anchor | None]) -> str:
    """A new line fitted to the file; `placed` holds the output of earlier replacement lines
    and `anchors` the bracket each replacement line continues (see `brackets.enclosing`).

    When widths map by a table (say 2 -> 4 spaces), a continuation line the model aligned
    under an open bracket is aligned under the same bracket in the file's text.
    """
    fit, line = cand.fix, R[j]
    at = anchors[j] if fit.aligns and line.strip() else None
    if at is not None and at[0] in placed:
        k, col = at
        spare = columns(lead(line)) - columns(R[k][:col + 1])
        ours = same_bracket(R[k], col, placed[k])
        if spare >= 0 and ours is not None:
            under = "".join(c if c == "\t" else " " for c in placed[k][:ours + 1])
            return under + " " * spare + fit.content(line).lstrip()
    return fit(line)
