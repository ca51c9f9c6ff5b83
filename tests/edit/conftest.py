from __future__ import annotations

from pathlib import Path

import pytest

from codeloop.events import Event
from codeloop.sandbox.base import CommandResult, Limits
from codeloop.tools.base import ToolContext
from codeloop.workspace.copy import CopyWorkspace


class NoCommands:
    """The editing tools never run commands; this sandbox fails the test if one tries."""

    name = "none"

    def run(self, command: str, cwd: Path, env: dict[str, str] | None = None,
            limits: Limits | None = None) -> CommandResult:
        raise AssertionError(f"an edit tool tried to run {command!r}")


class Ctx:
    def __init__(self, tmp_path: Path) -> None:
        self.repo = tmp_path / "repo"
        self.repo.mkdir()
        self.events: list[Event] = []
        self._state = tmp_path / "state"

    def tool_context(self) -> ToolContext:
        ws = CopyWorkspace(self.repo, self._state)
        return ToolContext(workspace=ws, sandbox=NoCommands(), emit=self.events.append)

    @property
    def tree(self) -> Path:
        return self._state / "tree"


@pytest.fixture
def env(tmp_path: Path) -> Ctx:
    return Ctx(tmp_path)
