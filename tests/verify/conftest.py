"""A plain shell sandbox for the verifier tests.

The real sandbox backends are another part's work; these tests need real commands run in
a directory, which `subprocess.run(shell=True)` gives without any isolation.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from codeloop.sandbox.base import CommandResult, Limits, cap_output


class ShellSandbox:
    name = "test-shell"

    def __init__(self) -> None:
        self.commands: list[str] = []

    def run(
        self, command: str, cwd: Path, env: dict[str, str] | None = None, limits: Limits | None = None
    ) -> CommandResult:
        limits = limits or Limits()
        self.commands.append(command)
        start = time.monotonic()
        try:
            done = subprocess.run(
                command, shell=True, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                timeout=limits.timeout_s, check=False,
            )
        except subprocess.TimeoutExpired as exc:
            output, truncated = cap_output(exc.stdout or b"", limits.max_output_bytes)
            return CommandResult(None, output, (time.monotonic() - start) * 1000, timed_out=True,
                                 truncated=truncated, backend=self.name)
        output, truncated = cap_output(done.stdout, limits.max_output_bytes)
        return CommandResult(done.returncode, output, (time.monotonic() - start) * 1000,
                             truncated=truncated, backend=self.name)


@pytest.fixture
def sandbox() -> ShellSandbox:
    return ShellSandbox()


def _write_tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


@pytest.fixture
def write_tree() -> Callable[[Path, dict[str, str]], Path]:
    """Write `{relative path: text}` under a root and return the root."""
    return _write_tree
