"""Shared fixtures: the plain subprocess sandbox and an environment that finds this Python's tools."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from codeloop.sandbox.environment import BASE_PATH
from codeloop.sandbox.subprocess_backend import SubprocessSandbox

# Commands start with a minimal PATH; this one leads to the interpreter running the tests
# (and the pytest, ruff and bandit installed with it). Third-party pytest plugins on the
# test machine only slow every nested run down, so they stay off.
TOOL_ENV = {"PATH": f"{Path(sys.executable).parent}:{BASE_PATH}", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}


@pytest.fixture
def sandbox() -> SubprocessSandbox:
    return SubprocessSandbox()


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


@pytest.fixture
def base_settings() -> dict[str, object]:
    """Verify settings that run this Python and its tools inside the sandbox."""
    return {"python": sys.executable, "env": dict(TOOL_ENV)}
