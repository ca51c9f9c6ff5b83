"""Errors the edit engine raises; each message tells the model or user how to retry."""

from __future__ import annotations

from codeloop.errors import CodeloopError


class EditError(CodeloopError):
    """An edit could not be applied; nothing was written."""


class NoMatch(EditError):
    """The search text was found nowhere in the file, at any matching level."""


class AmbiguousMatch(EditError):
    """The edit has more than one reading (mostly: its search text fits more than one place)
    and nothing says which one."""

    def __init__(self, message: str, hint: str = "", lines: list[int] | None = None) -> None:
        super().__init__(message, hint)
        self.lines = lines or []


class AmbiguousWhitespace(AmbiguousMatch):
    """The search fits one place, but the file has lines there (blank lines, mostly) that the
    search does not show, next to lines the edit changes: where they belong is unclear."""


class BadReplacement(EditError):
    """The search matched but the replacement cannot be fitted to the file (e.g. its indentation)."""


class NotTextFile(EditError):
    """The file is binary, too large, or in an encoding the edit cannot be written back in."""


class PatchFormatError(EditError):
    """A patch could not be parsed as SEARCH/REPLACE blocks, a unified diff or a patch envelope."""
