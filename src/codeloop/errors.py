"""Error types a user can act on; the CLI prints them without a traceback."""

from __future__ import annotations


class CodeloopError(Exception):
    """Base of every error codeloop raises on purpose; `hint` says what to do about it."""

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message}\n  hint: {self.hint}" if self.hint else self.message


class ConfigError(CodeloopError):
    """The configuration is missing a value or has a wrong one."""


class SessionNotFound(CodeloopError):
    """No session with that id exists in the store."""


class PathOutsideWorkspace(CodeloopError):
    """A tool argument named a path that leaves the repository."""


class StoreError(CodeloopError):
    """The event store could not be read or written (disk full, locked, corrupt)."""


class FleetError(CodeloopError):
    """Ray is missing, its cluster cannot be reached, or a session could not run on it."""
