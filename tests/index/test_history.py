from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from codeloop.index.history import Commit, CommitSearch, recent_commits, title_of
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
    # The file that sorts last was fixed for a timezone bug before: a tie is not broken by name.
    commit(root, {"app/reports.py": body + "# utc\n", "CHANGES.rst": "fixed\n"},
           "Fix timezone offset lost when parsing dates\n\nCloses #12.")
    commit(root, {"app/calendar.py": body + "# week\n"}, "Add week numbers")
    return root


def test_reads_messages_and_the_paths_each_commit_touched(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "repo")
    commits = recent_commits(root)
    assert [c.message.splitlines()[0] for c in commits] == [
        "Add week numbers", "Fix timezone offset lost when parsing dates", "initial"]
    assert commits[1].paths == ("CHANGES.rst", "app/reports.py")
    assert "Closes #12." in commits[1].message
    assert len(recent_commits(root, commits=1)) == 1
    assert recent_commits(root / "app")[1].paths == ("reports.py",)


def test_no_git_means_no_history(tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "a.py").write_text("x = 1\n")
    assert recent_commits(tmp_path / "plain") == []
    assert CommitSearch([]).files_for("timezone") == {}


def test_files_of_similar_commits_are_found_and_sweeps_and_prose_do_not_vote() -> None:
    sweep = Commit("Reformat timezone code", tuple(f"pkg/m{i}.py" for i in range(11)))
    search = CommitSearch([
        Commit("Fix timezone offset in parser", ("pkg/parser.py", "docs/changes.rst")),
        Commit("Speed up the timezone cache", ("pkg/cache.py", "pkg/tz.py")),
        Commit("Add a logo", ("pkg/ui.py",)),
        sweep,
    ])
    votes = search.files_for("timezone offset is wrong")
    assert set(votes) == {"pkg/parser.py", "pkg/cache.py", "pkg/tz.py"}
    assert votes["pkg/parser.py"] > votes["pkg/cache.py"]
    assert len(search) == 3
    assert search.files_for("completely unrelated words") == {}


def test_title_is_the_first_line_with_text() -> None:
    assert title_of("\n## Parser drops the offset\nbody text") == "Parser drops the offset"
    assert title_of("  \n") == ""


def test_the_index_refreshes_history_when_head_moves(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "repo")
    index = RepoIndex(root)
    index.update()
    assert "app/calendar.py" not in index.commit_search().files_for("leap years")
    commit(root, {"app/calendar.py": "def leap(year):\n    return year % 4 == 0\n"},
           "Handle leap years")
    assert "app/calendar.py" in index.commit_search().files_for("leap years")


def test_files_changed_by_similar_commits_rank_higher_than_without_history(
        tmp_path: Path) -> None:
    root = make_repo(tmp_path / "repo")
    copy = tmp_path / "copy"
    shutil.copytree(root, copy, ignore=shutil.ignore_patterns(".git"))

    def score(where: Path) -> float:
        index = RepoIndex(where)
        index.update()
        ranked = dict(rank_files(index, "parse_date loses the timezone\nsplits on the dash"))
        return ranked["app/reports.py"] - ranked["app/calendar.py"]

    assert score(copy) <= 0 < score(root)


def test_a_copied_workspace_searches_the_history_of_its_source(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "repo")
    view = tmp_path / "view"
    shutil.copytree(root, view, ignore=shutil.ignore_patterns(".git"))
    copied = RepoIndex(view, seed=root)
    assert "app/reports.py" in copied.commit_search().files_for("timezone offset")
    assert RepoIndex(view).commit_search().files_for("timezone offset") == {}


def test_messages_without_a_single_term_are_no_index_and_no_crash() -> None:
    """A first repository often has one commit named "i" or "x": BM25 had no vocabulary."""
    search = CommitSearch([Commit("i", ("a.py",)), Commit("x", ("b.py",))])
    assert len(search) == 0
    assert search.files_for("fix the parser") == {}
