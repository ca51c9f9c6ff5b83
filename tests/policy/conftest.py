"""Shared helpers for policy tests: a scratch repository and real hook scripts."""

from __future__ import annotations

import stat
import sys
from collections.abc import Callable
from pathlib import Path

import pytest


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A small repository tree with a secret and some sources."""
    root = tmp_path / "repo"
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "docs").mkdir()
    (root / "src" / "pkg" / "mod.py").write_text("x = 1\n")
    (root / "docs" / "index.md").write_text("# docs\n")
    (root / ".env").write_text("API_KEY=sk-test-123\n")
    return root


@pytest.fixture
def hook_script(tmp_path: Path) -> Callable[[str], str]:
    """Write a Python hook script; return the command line that runs it."""
    counter = iter(range(1000))

    def make(body: str) -> str:
        path = tmp_path / f"hook_{next(counter)}.py"
        path.write_text("import json, sys, time\n" + body)
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
        return f"{sys.executable} -S {path}"  # -S: no site import, 5x faster start

    return make
