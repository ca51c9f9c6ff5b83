"""A real repository with a committed base, the user's own staged, unstaged and stashed work,
and a session (event store + workspace) that changed some files."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from codeloop.events import SessionStarted
from codeloop.session.store import SQLiteEventStore
from codeloop.workspace.factory import open_workspace
from codeloop.workspace.locate import event_store_path, session_workspace_dir
from codeloop.workspace.safe_git import git, git_text
from tests.workspace.wstools import IDENTITY, make_repo

SID = "s-handoff"


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    gitconfig = tmp_path / "gitconfig"
    gitconfig.write_text("[user]\n\tname = Una User\n\temail = una@example.invalid\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(gitconfig))
    path = tmp_path / "repo"
    path.mkdir()
    make_repo(path)
    (path / "docs/guide.md").write_bytes(b"stashed edit\n")
    git([*IDENTITY, "stash", "-q"], path)
    (path / "docs/guide.md").write_bytes(b"staged edit\n")
    git(["add", "docs/guide.md"], path)
    (path / "README.md").write_bytes(b"# unstaged user edit\n")
    return path


def head(repo: Path) -> str:
    return git_text(["rev-parse", "HEAD"], repo).stdout.strip()


@pytest.fixture
def session(repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("CODELOOP_DATA_DIR", str(tmp_path / "data"))
    store = SQLiteEventStore(event_store_path())
    store.create(SID)
    store.append(SID, [SessionStarted(task="Return 5 from main\n\nand add a greeting file",
                                      repo=str(repo), model="none", base_commit=head(repo))])
    ws = open_workspace(repo, session_workspace_dir(SID))
    ws.write("src/app.py", b"def main():\n    return 5\n")
    ws.write("hello/greeting.txt", b"hello\n")
    ws.delete("src/util.py")
    return SID


def user_state(repo: Path) -> dict[str, object]:
    """Everything of the user's a branch hand-off must not change."""
    files = {}
    for dirpath, dirnames, filenames in os.walk(repo):
        dirnames[:] = sorted(d for d in dirnames if d != ".git")
        for name in sorted(filenames):
            full = Path(dirpath) / name
            rel = full.relative_to(repo).as_posix()
            files[rel] = (os.lstat(full).st_mode, os.readlink(full) if full.is_symlink()
                          else hashlib.sha256(full.read_bytes()).hexdigest())
    dot = repo / ".git"
    return {
        "files": files,
        "index": (dot / "index").read_bytes(),
        "HEAD": (dot / "HEAD").read_text(),
        "head": head(repo),
        "stash": git_text(["stash", "list", "--format=%H %s"], repo).stdout,
        "refs": set(git_text(["for-each-ref", "--format=%(refname) %(objectname)"],
                             repo).stdout.splitlines()),
    }
