"""The `Workspace` interface: a shadow of the user's repository that writes aside."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol


@dataclass
class ApplyResult:
    applied: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)
    refused: dict[str, str] = field(default_factory=dict)
    checkpoint: str | None = None


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

    def changed_files(self) -> list[str]: ...

    def diff(self) -> str:
        """A git-style unified diff of the session's changes against the user's tree."""
        ...

    def apply(self) -> ApplyResult: ...

    def discard(self) -> None: ...
