"""Shared set-up for loop tests: a real git repository with a failing test, and a runner."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path
from typing import Any

from codeloop.config import Settings
from codeloop.config_tables import Budgets
from codeloop.index.warmup import WARMUP_SERVICE, IndexWarmup
from codeloop.llm.scripted import ScriptedModel, Turn
from codeloop.llm.types import Model
from codeloop.session.runner import Runner
from codeloop.session.setup import RuntimeParts, build_runner, open_store, start_session
from codeloop.session.store import SQLiteEventStore

TEST_CMD = "python3 -B -m unittest discover -s tests"
BUGGY = "def add(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n"


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main",
         *args], cwd=repo, check=True, capture_output=True, text=True).stdout


def make_repo(tmp: Path) -> Path:
    repo = tmp / "repo"
    (repo / "tests").mkdir(parents=True)
    (repo / "calc.py").write_text(BUGGY)
    (repo / "tests" / "test_calc.py").write_text(
        "import unittest\nfrom calc import add\n\n\nclass T(unittest.TestCase):\n"
        "    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n")
    return committed(repo, "init")


def committed(repo: Path, message: str) -> Path:
    """`repo` made a git repository with all its files in one commit."""
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", message)
    return repo


def tree_hash(root: Path) -> str:
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in sorted(os.walk(root)):
        dirnames.sort()
        for name in sorted(filenames):
            p = Path(dirpath, name)
            st = p.lstat()
            h.update(f"{p.relative_to(root)}:{st.st_mode}".encode())
            h.update(p.read_bytes() if p.is_file() and not p.is_symlink() else b"")
    return h.hexdigest()


def call(name: str, cid: str | None = None, **arguments: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"name": name, "arguments": arguments}
    if cid:
        spec["id"] = cid
    return spec


def turn(*calls: dict[str, Any], text: str = "") -> Turn:
    return Turn(text=text, tool_calls=list(calls))


FIX_SCRIPT = [
    turn(call("read_file", path="calc.py"), text="Reading the code."),
    turn(call("run", command=TEST_CMD)),
    turn(call("edit_file", path="calc.py", old="return a - b", new="return a + b")),
    turn(call("run", command=TEST_CMD)),
    turn(call("finish", summary="add() subtracted; now it adds. Tests pass.")),
]


def settings(**budgets: Any) -> Settings:
    return Settings(sandbox=True, budgets=Budgets(**budgets))


def new_session(tmp: Path, repo: Path, model: Model, cfg: Settings | None = None,
                parts: RuntimeParts | None = None) -> tuple[SQLiteEventStore, Runner]:
    cfg = cfg or settings()
    store = open_store(tmp / "data")
    sid = start_session(store, "make the tests pass", repo, cfg, model.name)
    return store, build_runner(store, sid, repo, cfg, model, base_dir=tmp / "data", parts=parts)


def index_built(runner: Runner, timeout: float = 120.0) -> None:
    """Wait for the session's background index, for tests that assert what it finds."""
    warmup = runner.ctx.services[WARMUP_SERVICE]
    assert isinstance(warmup, IndexWarmup)
    assert warmup.wait_done(timeout) and warmup.error is None, warmup.error


def scripted(turns: list[Turn]) -> ScriptedModel:
    return ScriptedModel(turns)
