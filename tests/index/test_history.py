from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from codeloop.index.history import change_counts
from codeloop.index.rank import rank_files
from codeloop.index.service import RepoIndex


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


def commit(root: Path, files: dict[str, str], message: str) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    git(root, "add", "-A")
    git(root, "commit", "-qm", message)


def make_repo(root: Path) -> Path:
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.email", "t@example.com")
    git(root, "config", "user.name", "t")
    # Two files that match a query about parsing dates equally well.
    body = "def parse_date(text):\n    return text.split('-')\n"
    commit(root, {"app/calendar.py": body, "app/reports.py": body.replace("parse", "read")
                  + body}, "initial")
    for n in range(3):  # the file that sorts last changes most: a tie is not broken by name
        commit(root, {"app/reports.py": body + f"# revision {n}\n"}, f"reports {n}")
    return root


def test_counts_the_commits_that_touched_each_file(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "repo")
    assert change_counts(root) == {"app/reports.py": 4, "app/calendar.py": 1}
    assert change_counts(root, commits=2) == {"app/reports.py": 2}
    assert change_counts(root / "app") == {"reports.py": 4, "calendar.py": 1}


def test_no_git_means_no_history(tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "a.py").write_text("x = 1\n")
    assert change_counts(tmp_path / "plain") == {}


def test_the_index_refreshes_history_when_head_moves(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "repo")
    index = RepoIndex(root)
    index.update()
    assert index.recent_changes()["app/calendar.py"] == 1
    commit(root, {"app/calendar.py": "def read_date(text):\n    return text\n"}, "calendar")
    assert index.recent_changes()["app/calendar.py"] == 2


def test_often_changed_files_rank_higher_than_without_history(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "repo")
    copy = tmp_path / "copy"
    shutil.copytree(root, copy, ignore=shutil.ignore_patterns(".git"))

    def score(where: Path) -> float:
        index = RepoIndex(where)
        index.update()
        return dict(rank_files(index, "parse_date splits on the dash", limit=5))["app/reports.py"]

    assert score(root) > score(copy)
