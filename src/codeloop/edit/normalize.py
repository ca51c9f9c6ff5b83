"""Line normalisations the matching ladder compares under, and fixes for new lines."""

from __future__ import annotations

from collections.abc import Callable

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


def columns(ws: str, tab: int = 4) -> int:
    """The width of `ws` in columns, tabs stopping at multiples of `tab`."""
    col = 0
    for ch in ws:
        col = (col // tab + 1) * tab if ch == "\t" else col + 1
    return col
