"""The offline demo: a tiny repository with a bug, and a scripted model that fixes it."""

from __future__ import annotations

import shutil
from pathlib import Path

from codeloop.workspace.safe_git import git

DEMO_DIR = Path(__file__).parent
DEMO_TASK = "The tests in tests/test_stats.py fail. Find the bug and fix it."


def script_path() -> Path:
    return DEMO_DIR / "script.json"


def make_demo_repo(target: Path) -> Path:
    """Copy the example repository to `target` and make it a git repository with one commit."""
    shutil.copytree(DEMO_DIR / "repo", target, ignore=shutil.ignore_patterns("__pycache__"))
    # The demo commit is never signed: the user's signing setup is no business of the demo.
    identity = ["-c", "user.name=codeloop", "-c", "user.email=demo@codeloop.invalid",
                "-c", "init.defaultBranch=main", "-c", "commit.gpgSign=false"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "initial"]):
        git([*identity, *args], target)
    return target
