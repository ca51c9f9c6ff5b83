"""The agent's checkout is reused per repository, exactly at each task's commit, and locked."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from tests.eval.conftest import FakeTask, fake_specs, git

from codeloop.config import Settings
from codeloop.eval.swebench.checkout import apply_patch, refresh_checkout, task_checkout
from codeloop.eval.swebench.evaluate import Evaluation, model_factory
from codeloop.eval.swebench.harness import Bench
from codeloop.index import store
from codeloop.index.service import RepoIndex

PATCH_V2 = """diff --git a/pkg/core.py b/pkg/core.py
--- a/pkg/core.py
+++ b/pkg/core.py
@@ -1,2 +1,2 @@
 def answer():
-    return 2
+    return 3
"""


@dataclass
class History:
    mirror: Path
    first: str
    second: str


def _commit(src: Path, message: str) -> str:
    git("add", "-A", cwd=src)
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", message, cwd=src)
    return git("rev-parse", "HEAD", cwd=src).strip()


@pytest.fixture
def history(tmp_path: Path) -> History:
    """A repository with two commits (one file changed between them) and its bare mirror."""
    src = tmp_path / "src"
    (src / "pkg").mkdir(parents=True)
    (src / ".gitignore").write_text("build/\n*.egg-info/\n")
    (src / "pkg" / "__init__.py").write_text("")
    for n in range(20):
        (src / "pkg" / f"mod{n}.py").write_text(f"def helper_{n}(x):\n    return x + {n}\n")
    (src / "pkg" / "core.py").write_text("def answer():\n    return 1\n")
    git("init", "-q", "-b", "main", cwd=src)
    first = _commit(src, "one")
    (src / "pkg" / "core.py").write_text("def answer():\n    return 2\n")
    second = _commit(src, "two")
    git("tag", "v2", cwd=src)
    mirror = tmp_path / "mirrors" / "acme+pkg" / "repo"
    git("clone", "-q", "--bare", str(src), str(mirror), cwd=tmp_path)
    return History(mirror, first, second)


def _leave_a_mess(repo: Path) -> None:
    """What an instance leaves behind: edits, new files, a staged file, build artefacts."""
    (repo / "pkg" / "mod3.py").write_text("def helper_3(x):\n    return 'edited'\n")
    (repo / "scratch.txt").write_text("left over\n")
    (repo / "staged.py").write_text("x = 1\n")
    git("add", "staged.py", cwd=repo)
    (repo / "build" / "lib").mkdir(parents=True)
    (repo / "build" / "lib" / "ext.so").write_bytes(b"\x7fELF")
    (repo / "pkg.egg-info").mkdir()
    (repo / "pkg.egg-info" / "PKG-INFO").write_text("Name: pkg\n")


def test_a_reused_checkout_is_exactly_the_next_commit(history: History, tmp_path: Path) -> None:
    dest = tmp_path / "checkouts" / "acme+pkg"
    refresh_checkout(history.mirror, history.second, dest)
    assert (dest / "pkg" / "core.py").read_text() == "def answer():\n    return 2\n"
    apply_patch(dest, PATCH_V2, "test patch")
    _leave_a_mess(dest)
    git_dir = (dest / ".git").stat().st_ino
    untouched = (dest / "pkg" / "mod7.py").stat().st_mtime_ns

    refresh_checkout(history.mirror, history.first, dest)
    assert git("rev-parse", "HEAD", cwd=dest).strip() == history.first
    assert git("status", "--porcelain", "--ignored", "--untracked-files=all", cwd=dest) == ""
    assert (dest / "pkg" / "core.py").read_text() == "def answer():\n    return 1\n"
    assert (dest / "pkg" / "mod3.py").read_text() == "def helper_3(x):\n    return x + 3\n"
    for gone in ("scratch.txt", "staged.py", "build", "pkg.egg-info"):
        assert not (dest / gone).exists(), gone
    # Moved, not cloned again: files both commits share keep their times, so an index
    # of the checkout re-parses only what differs.
    assert (dest / ".git").stat().st_ino == git_dir
    assert (dest / "pkg" / "mod7.py").stat().st_mtime_ns == untouched
    assert "v2" in git("tag", cwd=dest).split()


def test_the_index_of_a_reused_checkout_updates_incrementally(history: History,
                                                              tmp_path: Path) -> None:
    dest = tmp_path / "checkouts" / "acme+pkg"
    refresh_checkout(history.mirror, history.first, dest)
    index = RepoIndex(dest)
    assert index.update().added == 23
    index.close()
    _leave_a_mess(dest)
    refresh_checkout(history.mirror, history.second, dest)
    apply_patch(dest, PATCH_V2, "test patch")

    index = RepoIndex(dest)
    stats = index.update()
    assert (stats.added, stats.changed, stats.removed) == (0, 1, 0)
    assert index.find_symbol("answer")[0].path == "pkg/core.py"
    assert index.read_lines("pkg/core.py") == ["def answer():", "    return 3"]
    index.close()


def test_a_checkout_of_another_mirror_or_a_damaged_one_is_cloned_again(
        history: History, tmp_path: Path) -> None:
    dest = tmp_path / "checkouts" / "acme+pkg"
    refresh_checkout(history.mirror, history.first, dest)
    other = tmp_path / "elsewhere" / "repo"
    git("clone", "-q", "--bare", str(history.mirror), str(other), cwd=tmp_path)
    refresh_checkout(other, history.second, dest)
    alternates = (dest / ".git" / "objects" / "info" / "alternates").read_text().strip()
    assert alternates == str(other / "objects")

    (dest / ".git" / "index.lock").write_text("")  # as a killed git leaves it
    (dest / "scratch.txt").write_text("left over\n")
    refresh_checkout(other, history.first, dest)
    assert git("rev-parse", "HEAD", cwd=dest).strip() == history.first
    assert git("status", "--porcelain", "--ignored", "--untracked-files=all", cwd=dest) == ""


@pytest.fixture
def held_lock(tmp_path: Path) -> Iterator[Path]:
    """Another process holding the lock of the checkout `tmp_path/checkouts/acme+pkg`."""
    lock = tmp_path / "checkouts" / "acme+pkg.lock"
    lock.parent.mkdir(parents=True)
    code = ("import fcntl, sys; f = open(sys.argv[1], 'a'); fcntl.flock(f, fcntl.LOCK_EX); "
            "print('locked', flush=True); sys.stdin.read()")
    proc = subprocess.Popen([sys.executable, "-c", code, str(lock)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline() == "locked\n"
    yield lock
    assert proc.stdin is not None
    proc.stdin.close()
    proc.wait(timeout=10)


def test_a_locked_checkout_is_not_shared(history: History, tmp_path: Path,
                                         held_lock: Path, index_cache_dir: Path) -> None:
    home = tmp_path / "checkouts" / "acme+pkg"
    with task_checkout(history.mirror, history.second, home, tmp_path / "scratch") as repo:
        assert repo == tmp_path / "scratch"
        assert git("rev-parse", "HEAD", cwd=repo).strip() == history.second
        index = RepoIndex(repo)
        index.update()
        index.close()
        assert store.index_dir(repo).is_dir()
    assert not home.exists()
    # The fresh checkout is thrown away with its directory: its index goes now.
    assert not store.index_dir(repo).exists()


def test_the_checkout_is_reused_when_free_and_locked_while_in_use(
        history: History, tmp_path: Path) -> None:
    home = tmp_path / "checkouts" / "acme+pkg"
    with task_checkout(history.mirror, history.first, home, tmp_path / "a") as repo:
        assert repo == home
        (repo / "scratch.txt").write_text("left over\n")
        # Meanwhile a second eval process cannot take it.
        probe = subprocess.run(
            [sys.executable, "-c", "import fcntl, sys; f = open(sys.argv[1], 'a'); "
             "fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)", str(home.parent / "acme+pkg.lock")],
            capture_output=True, text=True)
        assert probe.returncode != 0 and "BlockingIOError" in probe.stderr
    with task_checkout(history.mirror, history.second, home, tmp_path / "b") as repo:
        assert repo == home and not (repo / "scratch.txt").exists()
        assert git("rev-parse", "HEAD", cwd=repo).strip() == history.second
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()
    assert sorted(os.listdir(home.parent)) == ["acme+pkg", "acme+pkg.lock"]


@pytest.mark.slow
def test_instances_in_a_row_share_the_checkout_and_leave_one_index(
        fake_task: FakeTask, tmp_path: Path, index_cache_dir: Path) -> None:
    bench = Bench(fake_task.mirrors, fake_task.env_cache, specs=fake_specs, work_dir=tmp_path)
    evaluation = Evaluation(bench, model_factory("oracle", Settings()), Settings(), tmp_path)
    home = tmp_path / "checkouts" / "acme+calc"
    for _ in range(2):
        # The second time the test patch applies only if the first one's was cleaned away.
        result = evaluation.one(fake_task.inst)
        assert result.outcome == "resolved", result.reason
        assert result.session_start_s > 0
        assert [store.read_origin(d) for d in store.index_dirs(index_cache_dir)] == [
            store.Origin(str(home))]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkouts", "index-cache"]
