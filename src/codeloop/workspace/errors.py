"""Errors of the workspace layer, each with a hint the user can act on."""

from __future__ import annotations

from codeloop.errors import CodeloopError


class WorkspaceError(CodeloopError):
    """The session workspace could not do what was asked."""


class ProtectedPath(WorkspaceError):
    """A write or delete aimed at a path the agent may not change (`.git`)."""


class UnsafePath(WorkspaceError):
    """A path whose parent is a symlink or not a directory, or whose type is not a plain file."""


class WorkspaceStateError(WorkspaceError):
    """The saved workspace state does not fit the repository or is damaged."""


class NoCheckpoint(WorkspaceError):
    """`undo` found no applied checkpoint to restore."""


class ApplyFailed(WorkspaceError):
    """Writing the changes into the user's tree failed part-way; what was written is put back."""
