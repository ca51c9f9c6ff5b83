"""Line normalisations the matching ladder compares under, and the indentation fitter."""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction

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
    """Fold, in new lines, the non-ASCII characters the search had where the file has ASCII."""
    bad: set[str] = set()
    for search, found in pairs:
        bad.update(c for c in search if c in _NON_ASCII_FOLD and c not in found)
    if not bad:
        return identity
    table = {ord(c): FOLD[c] for c in bad}
    return lambda line: line.translate(table)


def trailing_fix(pairs: list[tuple[str, str]]) -> LineFix:
    """Strip trailing whitespace from new lines if the search added some the file lacks."""
    if any(s != s.rstrip() and f == f.rstrip() for s, f in pairs):
        return lambda line: line.rstrip()
    return identity


def fit_indent(pairs: list[tuple[str, str]], other_lines: list[str]) -> LineFix | None:
    """A re-indenter mapping the search's indentation onto the file's, or None if not uniform.

    `pairs` are (search line, file line) for aligned non-blank lines; `other_lines` are the
    replacement's lines, consulted for the search's indent unit when tabs and spaces differ.
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
    return _fit_linear(leads, [lead(x) for x in other_lines if x.strip()])


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


def _fit_linear(leads: list[tuple[str, str]], other_leads: list[str]) -> LineFix | None:
    """Fit file_width = a * search_width + b when each side indents with one character."""
    file_chars = set("".join(f for _, f in leads))
    search_chars = set("".join(s for s, _ in leads) + "".join(other_leads))
    if len(file_chars) != 1 or len(search_chars) > 1:
        return None
    file_char = file_chars.pop()
    widths: dict[int, int] = {}
    for s, f in leads:
        if widths.setdefault(len(s), len(f)) != len(f):
            return None
    levels = sorted(widths)
    if len(levels) >= 2:
        s1, s2 = levels[0], levels[-1]
        a = Fraction(widths[s2] - widths[s1], s2 - s1)
        b = widths[s1] - a * s1
    elif levels[0] > 0 and search_chars and search_chars != {file_char}:
        a, b = Fraction(widths[levels[0]], levels[0]), Fraction(0)
    else:
        return None
    if a <= 0 or any(a * s + b != f for s, f in widths.items()):
        return None

    def fix(line: str) -> str:
        if not line.strip():
            return line
        ws = lead(line)
        width = a * len(ws) + b
        if (ws and set(ws) != search_chars) or width < 0 or width.denominator != 1:
            raise BadReplacement(
                f"the replacement line {line.strip()!r} has indentation that does not map onto "
                "the file's indentation",
                "send the search and replacement with the file's own indentation",
            )
        return file_char * int(width) + line[len(ws):]

    return fix
