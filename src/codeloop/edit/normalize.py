"""Line normalisations the matching ladder compares under, and the indentation fitter."""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from itertools import pairwise

from codeloop.edit.errors import BadReplacement

# Characters models substitute for ASCII: typographic quotes, dashes, odd spaces.
FOLD: dict[str, str] = {
    **dict.fromkeys("‘’‚‛′", "'"),
    **dict.fromkeys("“”„‟″«»", '"'),
    **dict.fromkeys("‐‑‒–—―−", "-"),
    **dict.fromkeys("\u00a0\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u202f\u205f\u3000", " "),
    **dict.fromkeys("\u200b\u200c\u200d\u2060\ufeff", ""),
    "…": "...",
}
_FOLD_TABLE = {ord(k): v for k, v in FOLD.items()}
_NON_ASCII_FOLD = {k for k in FOLD if not k.isascii()}

LineFix = Callable[[str], str]


def fold(line: str) -> str:
    return line.translate(_FOLD_TABLE)


def key_rstrip(line: str) -> str:
    return line.rstrip()


def key_strip(line: str) -> str:
    return line.strip()


def key_fold(line: str) -> str:
    return fold(line).strip()


def lead(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def identity(line: str) -> str:
    return line


def unicode_fix(pairs: list[tuple[str, str]]) -> LineFix:
    """Fold typographic characters in new lines once the search shows the model substituting them.

    A search with curly quotes where the file has straight ones means the model's text was
    typographically rewritten; its new lines almost surely were too.
    """
    if not any(c in _NON_ASCII_FOLD and c not in found for search, found in pairs for c in search):
        return identity
    return fold


def trailing_fix(pairs: list[tuple[str, str]]) -> LineFix:
    """Remove from new lines the trailing whitespace the search added to the file's lines.

    When the search added one and the same suffix everywhere, only that suffix is removed,
    so whitespace the file (or the intended new line) really has survives.
    """
    added = {s[len(f):] if s.startswith(f) else s[len(s.rstrip()):]
             for s, f in pairs if s != f and s.rstrip() == f.rstrip() and len(s) > len(f)}
    if not added:
        return identity
    if len(added) == 1:
        suffix = added.pop()
        return lambda line: line[: -len(suffix)] if line.endswith(suffix) else line
    return lambda line: line.rstrip()


def style_fix(text: str, new_lines: list[str]) -> LineFix:
    """Convert tab/space indentation in new lines to the one style the file uses throughout.

    Only when the file never indents the other way: a tab in a spaces-only Python file is
    an error, never an intent.
    """
    leads = {lead(x) for x in new_lines}

    # Ordered so the common case (spaces everywhere) is settled by an early hit in the text.
    def spaces() -> bool:
        return text.startswith(" ") or "\n " in text

    def tabs() -> bool:
        return text.startswith("\t") or "\n\t" in text

    if any("\t" in w for w in leads):
        if spaces() and not tabs():
            return lambda line: lead(line).replace("\t", "    ") + line[len(lead(line)):]
    elif any("    " in w for w in leads) and not spaces() and tabs():
        return lambda line: lead(line).replace("    ", "\t") + line[len(lead(line)):]
    return identity


def fit_indent(pairs: list[tuple[str, str]]) -> LineFix | None:
    """A re-indenter mapping the search's indentation onto the file's, or None if not uniform.

    `pairs` are (search line, file line) for aligned non-blank lines.
    """
    leads = [(lead(s), lead(f)) for s, f in pairs if s.strip()]
    if all(s == f for s, f in leads):
        return identity
    first_s, first_f = leads[0]
    if first_f.endswith(first_s):
        prefix = first_f[: len(first_f) - len(first_s)]
        if all(f == prefix + s for s, f in leads):
            return _add_prefix(prefix)
    if first_s.endswith(first_f):
        prefix = first_s[: len(first_s) - len(first_f)]
        if all(s == prefix + f for s, f in leads):
            return _remove_prefix(prefix)
    return _fit_table(leads)


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


def scaled_levels(pairs: list[tuple[str, str]]) -> set[int] | None:
    """The search's indent widths (columns) if the file's indent unit differs from the search's.

    Under such a scaling, a continuation line aligned under a bracket cannot be mapped by
    width alone; the caller refuses new continuation lines at widths not seen here.
    """
    leads = [(_columns(lead(s), 4), _columns(lead(f), 4)) for s, f in pairs if s.strip()]
    levels = sorted(set(leads))
    if len(levels) < 2:
        return None
    (s1, f1), (s2, f2) = levels[0], levels[-1]
    if s2 == s1 or f2 - f1 == s2 - s1:
        return None
    return {sw for sw, _ in leads}


def _open_brackets(line: str) -> list[int]:
    """Positions of the brackets `line` leaves open (quotes tracked roughly, one line)."""
    stack: list[int] = []
    quote = ""
    for i, ch in enumerate(line):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch == "#":
            break
        elif ch in "([{":
            stack.append(i)
        elif ch in ")]}" and stack:
            stack.pop()
    return stack


def aligned_prefix(prev: str) -> str | None:
    """The indentation that aligns a continuation line with `prev`'s last open bracket.

    None when no bracket is left open or when it ends the line (a hanging indent then
    follows the indent width instead).
    """
    stack = _open_brackets(prev)
    if not stack or not prev[stack[-1] + 1:].split("#")[0].strip():
        return None
    return "".join(c if c == "\t" else " " for c in prev[: stack[-1] + 1])


def structural(pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The pairs whose indentation is block structure, not continuation-line alignment."""
    return [p for i, p in enumerate(pairs) if i == 0 or not _open_brackets(pairs[i - 1][0])]


def columns(ws: str, tab: int = 4) -> int:
    return _columns(ws, tab)


def _columns(ws: str, tab: int) -> int:
    col = 0
    for ch in ws:
        col = (col // tab + 1) * tab if ch == "\t" else col + 1
    return col


def _fit_table(leads: list[tuple[str, str]]) -> LineFix | None:
    """Map search indent widths to file widths, in columns, when the map is strictly increasing.

    A table rather than one linear rule, so continuation lines aligned under a bracket keep
    fitting after a 4-to-2-space or tabs-to-spaces rewrite.
    """
    file_tabs = any("\t" in f for _, f in leads)
    for tab in (4, 8, 2):
        table: dict[int, int] = {}
        if any(table.setdefault(_columns(s, tab), _columns(f, tab)) != _columns(f, tab)
               for s, f in leads):
            continue
        levels = sorted(table)
        if any(table[a] >= table[b] for a, b in pairwise(levels)):
            continue
        slope = (Fraction(table[levels[-1]] - table[levels[0]], levels[-1] - levels[0])
                 if len(levels) > 1 else Fraction(1))
        return _table_fix(table, slope, tab, file_tabs)
    return None


def _table_fix(table: dict[int, int], slope: Fraction, tab: int, file_tabs: bool) -> LineFix:
    def fix(line: str) -> str:
        if not line.strip():
            return line
        ws = lead(line)
        width = Fraction(_columns(ws, tab))
        if width not in table:
            near = min(table, key=lambda k: (abs(k - width), k))
            width = table[near] + slope * (width - near)
        else:
            width = Fraction(table[int(width)])
        if width < 0 or width.denominator != 1:
            raise BadReplacement(
                f"the replacement line {line.strip()!r} has indentation that does not map onto "
                "the file's indentation",
                "send the search and replacement with the file's own indentation",
            )
        cols = int(width)
        pad = "\t" * (cols // tab) + " " * (cols % tab) if file_tabs else " " * cols
        return pad + line[len(ws):]

    return fix
