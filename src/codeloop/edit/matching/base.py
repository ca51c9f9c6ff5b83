"""What the matching ladder takes and gives: the edit, its result, and a candidate place."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from codeloop.edit.normalize import LineFix, identity

LEVELS = (
    "exact",
    "trailing_whitespace",
    "indentation",
    "unicode",
    "blank_lines",
    "elision",
    "fuzzy",
)
# How many candidate line numbers a refusal lists.
MAX_SHOWN = 12

KeyFn = Callable[[str], str]
Span = tuple[int, int]


@dataclass(frozen=True)
class Edit:
    """One search/replace pair plus whatever says where it belongs."""

    search: str
    replace: str
    # False for str_replace semantics: `search` may be any substring, not whole lines.
    whole_lines: bool = True
    replace_all: bool = False
    hint_line: int | None = None
    anchors: tuple[str, ...] = ()
    at_eof: bool = False


@dataclass(frozen=True)
class EditResult:
    text: str
    strategy: str
    start_line: int
    old_lines: int
    new_lines: int
    already_applied: bool = False


@dataclass(frozen=True)
class Fit:
    """How new lines are fitted to the file: their text (trailing whitespace, typographic
    characters), then their indentation; `aligns` when widths map by a table, so that a
    continuation line goes under its bracket rather than by its width."""

    content: LineFix = identity
    indent: LineFix = identity
    aligns: bool = False

    def __call__(self, line: str) -> str:
        return self.indent(self.content(line))


EXACT_FIT = Fit()


@dataclass
class Candidate:
    """A file window [start, end) a level found, each search line's span in it, and the fix
    that fits new lines to the file."""

    start: int
    end: int
    align: list[Span | None]
    fix: Fit = EXACT_FIT
    # The alignment with the search's blank lines paired from the start of each run of the
    # file's blank lines instead of its end; None when the two are the same.
    alt_align: list[Span | None] | None = None
