"""Brackets left open across lines, for continuation lines aligned under their bracket.

Quotes are tracked within a line only and a comment ends it: rough, but a stray bracket
in a docstring only makes the lines after it look like continuation lines, and those are
aligned under a bracket only when they already sit at or past its column.
"""

from __future__ import annotations

OPEN, CLOSE = "([{", ")]}"
# (line, column) of an open bracket that has code after it on its line.
Anchor = tuple[int, int]


def bracket_columns(line: str) -> list[int]:
    """Columns of the brackets of `line` outside quotes and comments, opening or closing."""
    out: list[int] = []
    quote = ""
    for i, ch in enumerate(line):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch == "#":
            break
        elif ch in OPEN or ch in CLOSE:
            out.append(i)
    return out


def enclosing(lines: list[str]) -> list[Anchor | None]:
    """For each line, the innermost bracket open where it starts; None when none is open or
    when that bracket ends its line (a hanging indent, which follows the indent width)."""
    stack: list[tuple[int, int, bool]] = []
    out: list[Anchor | None] = []
    for i, line in enumerate(lines):
        top = stack[-1] if stack else None
        out.append((top[0], top[1]) if top is not None and not top[2] else None)
        for col in bracket_columns(line):
            if line[col] in OPEN:
                hanging = not line[col + 1:].split("#")[0].strip()
                stack.append((i, col, hanging))
            elif stack:
                stack.pop()
    return out


def same_bracket(src: str, col: int, dst: str) -> int | None:
    """The column in `dst` of the bracket at `col` in `src`, where `dst` is the same line
    re-indented (or with its text fixed): the bracket at the same place among its brackets."""
    ours, theirs = bracket_columns(src), bracket_columns(dst)
    if col not in ours or len(ours) != len(theirs):
        return None
    at = theirs[ours.index(col)]
    return at if dst[at] == src[col] else None
