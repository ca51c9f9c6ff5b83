"""Fitting the replacement's indentation to the file's when the search was indented another
way: a constant shift, tabs for spaces, or another indent width (2-space for 4-space)."""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from itertools import pairwise

from codeloop.edit.brackets import enclosing
from codeloop.edit.errors import BadReplacement
from codeloop.edit.normalize import LineFix, columns, identity, lead

Pairs = list[tuple[str, str]]  # (search line, file line)


def fit_indent(pairs: Pairs) -> tuple[LineFix, bool] | None:
    """A re-indenter mapping the search's indentation onto the file's, and whether it maps
    widths by a table (then a continuation line is placed under its bracket instead, as a
    table cannot say where a bracket lands); None when no rule fits.

    `pairs` are (search line, file line) for aligned non-blank lines, in order.
    """
    leads = [(lead(s), lead(f)) for s, f in pairs if s.strip()]
    if all(s == f for s, f in leads):
        return identity, False
    first_s, first_f = leads[0]
    if first_f.endswith(first_s):
        prefix = first_f[: len(first_f) - len(first_s)]
        if all(f == prefix + s for s, f in leads):
            return _add_prefix(prefix), False
    if first_s.endswith(first_f):
        prefix = first_s[: len(first_s) - len(first_f)]
        if all(s == prefix + f for s, f in leads):
            return _remove_prefix(prefix), False
    # Continuation lines sit under their bracket, at any width: only block structure
    # says how widths map.
    table = _fit_table([(lead(s), lead(f)) for s, f in structural(pairs) if s.strip()])
    return (table, True) if table is not None else None


def structural(pairs: Pairs) -> Pairs:
    """The pairs whose indentation is block structure, not alignment under a bracket."""
    where = enclosing([s for s, _ in pairs])
    return [p for p, at in zip(pairs, where, strict=True) if at is None]


# Whitespace-only lines are left as written by the re-indenters: models indent them
# inconsistently, and their content is invisible anyway.
def _add_prefix(prefix: str) -> LineFix:
    return lambda line: prefix + line if line.strip() else line


def _remove_prefix(prefix: str) -> LineFix:
    def fix(line: str) -> str:
        if not line.strip():
            return line
        if line.startswith(prefix):
            return line[len(prefix):]
        raise BadReplacement(
            f"the replacement line {line.strip()!r} is indented less than the search text, "
            "so it cannot be re-indented to match the file",
            "send the search and replacement with the file's own indentation",
        )

    return fix


def _fit_table(leads: list[tuple[str, str]]) -> LineFix | None:
    """Map search indent widths to file widths, in columns, when the map is strictly increasing."""
    file_tabs = any("\t" in f for _, f in leads)
    for tab in (4, 8, 2):
        table: dict[int, int] = {}
        if any(table.setdefault(columns(s, tab), columns(f, tab)) != columns(f, tab)
               for s, f in leads):
            continue
        if any(table[a] >= table[b] for a, b in pairwise(sorted(table))):
            continue
        return _table_fix(table, tab, file_tabs)
    return None


def _table_fix(table: dict[int, int], tab: int, file_tabs: bool) -> LineFix:
    levels = sorted(table)
    slope = (Fraction(table[levels[-1]] - table[levels[0]], levels[-1] - levels[0])
             if len(levels) > 1 else Fraction(1))
    # A width the search does not show maps by a constant shift, or, when widths scale,
    # only along the search's own grid of widths and a table that is one straight line:
    # anything else (a line aligned by eye, say) is a guess.
    step = math.gcd(*levels) or 1
    straight = all(table[w] == table[levels[0]] + slope * (w - levels[0]) for w in levels)

    def fix(line: str) -> str:
        if not line.strip():
            return line
        ws = lead(line)
        width = columns(ws, tab)
        if width in table:
            cols = Fraction(table[width])
        elif straight and (slope == 1 or width % step == 0):
            cols = table[levels[0]] + slope * (width - levels[0])
        else:
            cols = Fraction(-1)
        if cols < 0 or cols.denominator != 1:
            raise BadReplacement(
                f"the replacement line {line.strip()!r} is indented to column {width}, which "
                "the search text's indentation does not map onto the file's (the search text "
                f"indents its lines at columns {', '.join(map(str, levels))})",
                "send the search and replacement with the file's own indentation",
            )
        n = int(cols)
        pad = "\t" * (n // tab) + " " * (n % tab) if file_tabs else " " * n
        return pad + line[len(ws):]

    return fix


def check_new_indent(file_lines: Callable[[], list[str]], lines: list[str], fresh: list[int],
                     path: str) -> None:
    """Refuse new lines that indent a block by 2 spaces in a file whose blocks indent by 4
    and never by 2.

    `lines` are the replacement's lines as they will be written, `fresh` the indices of
    those the edit adds; `file_lines` gives the file's lines, read only when needed. A
    search that showed no indented lines gave no rule to re-indent by, and which widths
    the model meant (all of them doubled? its continuation lines too?) is a guess.
    """
    new = set(fresh)
    # Cheap first: a 2-space block needs a new line at a width of 2 modulo 4.
    if not any(columns(lead(lines[j])) % 4 == 2 for j in new if lines[j].strip()):
        return
    twos = [k for j, k in _block_steps(lines) if j in new and k in new
            and columns(lead(lines[k])) - columns(lead(lines[j])) == 2]
    if not twos:
        return
    theirs = file_lines()
    steps = {columns(lead(theirs[k])) - columns(lead(theirs[j])) for j, k in _block_steps(theirs)}
    if 4 not in steps or 2 in steps:
        return
    line = lines[twos[0]]
    raise BadReplacement(
        f"the replacement line {line.strip()!r} in {path} indents its block by 2 spaces, "
        "but the file indents blocks by 4",
        "send the replacement with the file's own indentation (4 spaces per level)",
    )


def _block_steps(lines: list[str]) -> list[tuple[int, int]]:
    """(opener, first line) of each block: a line ending with ':' outside brackets and the
    next non-blank line, when that one is indented deeper."""
    where = enclosing(lines)
    out = []
    for j, line in enumerate(lines):
        if where[j] is not None or not line.split("#")[0].rstrip().endswith(":"):
            continue
        k = next((k for k in range(j + 1, len(lines)) if lines[k].strip()), None)
        if k is not None and columns(lead(lines[k])) > columns(lead(line)):
            out.append((j, k))
    return out
