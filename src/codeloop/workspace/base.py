"""The `Workspace` interface: a shadow of the user's repository that writes aside."""

from __future__ import annotations

import builtins
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from codeloop.workspace.apply import Verdict
    from codeloop.workspace.changes import RawChange


@dataclass
class ApplyResult:
    applied: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)
    refused: dict[str, str] = field(default_factory=dict)
    checkpoint: str | None = None


@dataclass
class FileChange:
    """One entry of the session's diff, as shown to people and in `--json`."""

    path: str
    status: str  # added, modified, deleted, renamed, mode, type
    old_path: str | None = None
    old_mode: str | None = None
    new_mode: str | None = None
    binary: bool = False
    diff: str = field(default="", repr=False)


class Workspace(Protocol):
    """Reads see the user's files, writes land aside; the user's tree changes only on `apply`."""

    @property
    def root(self) -> Path:
        """The user's repository."""
        ...

    @property
    def path(self) -> Path:
        """The merged view that file tools and commands work in."""
        ...

    @property
    def kind(self) -> str:
        """How the workspace isolates writes ("overlay", "copy"), for reports."""
        ...

    def resolve(self, rel: str) -> Path:
        """An absolute path inside the merged view; raises PathOutsideWorkspace."""
        ...

    def read(self, rel: str) -> bytes: ...

    def write(self, rel: str, data: bytes) -> None: ...

    def delete(self, rel: str) -> None: ...

    def list(self, rel: str = ".") -> list[str]: ...

    def changed_files(self) -> builtins.list[str]: ...

    def diff(self) -> str:
        """A git-style unified diff of the session's changes against the user's tree."""
        ...

    def apply(self) -> ApplyResult: ...

    def discard(self) -> None: ...


class LayeredWorkspace(Workspace, Protocol):
    """A workspace whose commands run on an overlay: `absorb` takes in a command's upper layer."""

    @property
    def state_dir(self) -> Path: ...

    def layer(self) -> AbstractContextManager[tuple[Path, Path]]:
        """Fresh (upper, work) dirs for one command's overlay, removed on exit."""
        ...

    def absorb(self, upper: Path) -> builtins.list[str]:
        """Merge an overlayfs upper layer into `path`; returns the changed paths."""
        ...

    def changes(self) -> builtins.list[FileChange]:
        """The session's changes as diff entries (renames paired), `.git` left out."""
        ...

    def undo(self, checkpoint: str | None = None) -> builtins.list[str]:
        """Restore the user's files as they were before an `apply`; returns restored paths."""
        ...

    def pending(self) -> tuple[builtins.list[RawChange], Verdict]:
        """The changes `apply` would write and what stops it, without writing anything."""
        ...
