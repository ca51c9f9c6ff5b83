"""`codeloop apply ID --branch NAME [--commit]` on real repositories: the commit lands on a new
branch, and the user's branch, index, working tree and stash stay byte for byte."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from codeloop.cli import main
from codeloop.events import SessionStarted
from codeloop.session.store import SQLiteEventStore
from codeloop.workspace.factory import open_workspace
from codeloop.workspace.locate import event_store_path, session_workspace_dir
from codeloop.workspace.safe_git import git, git_text
from tests.handoff.conftest import head, user_state


def branch_tree(repo: Path, ref: str) -> dict[str, bytes]:
    listing = git_text(["ls-tree", "-r", "--name-only", ref], repo).stdout.split()
    return {rel: git(["cat-file", "blob", f"{ref}:{rel}"], repo).stdout for rel in listing}


def events_of(sid: str, kind: str) -> list[dict[str, object]]:
    store = SQLiteEventStore(event_store_path())
    return [e.event.model_dump() for e in store.read(sid) if e.event.type == kind]


def test_branch_commit_leaves_the_user_alone(session: str, repo: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    base = head(repo)
    before_tree = branch_tree(repo, base)
    before = user_state(repo)
    assert main(["apply", session, "--branch", "codeloop/fix", "--commit", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    after = user_state(repo)
    new_refs = after.pop("refs") - before.pop("refs")  # type: ignore[operator]
    assert after == before
    assert new_refs == {f"refs/heads/codeloop/fix {out['commit']}"}
    assert out["base"] == base and out["branch"] == "codeloop/fix"
    assert out["files"] == ["hello/greeting.txt", "src/app.py", "src/util.py"]
    commit = out["commit"]
    assert git_text(["rev-parse", "refs/heads/codeloop/fix"], repo).stdout.strip() == commit
    assert git_text(["rev-parse", f"{commit}^"], repo).stdout.strip() == base
    expected = dict(before_tree)
    expected["src/app.py"] = b"def main():\n    return 5\n"
    expected["hello/greeting.txt"] = b"hello\n"
    del expected["src/util.py"]
    assert branch_tree(repo, commit) == expected
    # The user's staged and unstaged work is theirs: not in the commit.
    assert expected["README.md"] == b"# demo\n"
    message = git_text(["log", "-1", "--format=%B", commit], repo).stdout
    # No model configured: the message is made by rule from the task, and recorded.
    assert message.startswith("Return 5 from main\n")
    assert "Codeloop-Session: s-handoff" in message
    assert git_text(["log", "-1", "--format=%an <%ae>", commit], repo).stdout.strip() == \
        "Una User <una@example.invalid>"
    written = events_of(session, "commit_message_written")
    assert [w["source"] for w in written] == ["fallback"]
    assert events_of(session, "branch_committed")[0]["commit"] == commit
    assert main(["show", session]) == 0
    assert f"branch codeloop/fix: commit {commit[:12]}" in capsys.readouterr().out
    # The session's changes are still there to apply or discard.
    assert main(["diff", session, "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)) == 3


def test_preview_writes_nothing_and_commit_reuses_its_message(
        session: str, repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    refs = git_text(["for-each-ref"], repo).stdout
    assert main(["apply", session, "--branch", "feature"]) == 0
    out = capsys.readouterr().out
    assert "would create branch feature" in out and "--commit" in out
    assert git_text(["for-each-ref"], repo).stdout == refs
    assert main(["apply", session, "--branch", "feature", "--commit"]) == 0
    assert "created branch feature" in capsys.readouterr().out
    assert len(events_of(session, "commit_message_written")) == 1


def test_author_and_co_author_trailers_from_config(
        session: str, repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "codeloop" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('[handoff]\nauthor = "Bot Person <bot@example.invalid>"\n'
                      'co_authors = ["Ada <ada@example.invalid>"]\nsession_trailer = false\n')
    assert main(["apply", session, "--branch", "b", "--commit", "--json"]) == 0
    commit = json.loads(capsys.readouterr().out)["commit"]
    fmt = "%an <%ae>|%cn <%ce>"
    assert git_text(["log", "-1", f"--format={fmt}", commit], repo).stdout.strip() == \
        "Bot Person <bot@example.invalid>|Una User <una@example.invalid>"
    message = git_text(["log", "-1", "--format=%B", commit], repo).stdout
    assert message.rstrip().endswith("Co-authored-by: Ada <ada@example.invalid>")
    assert "Codeloop-Session" not in message


def test_conflict_with_the_base_is_refused(session: str, repo: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    # The user's copy of src/app.py (which the session changed) differs from the base
    # commit: the session's diff does not apply there.
    (repo / "src/app.py").write_bytes(b"def main():\n    return 1\n# mine\n")
    ws = open_workspace(repo, session_workspace_dir(session))
    ws.discard()
    ws.write("src/app.py", b"def main():\n    return 5\n# mine\n")
    user_before = user_state(repo)
    assert main(["apply", session, "--branch", "x", "--commit"]) == 2
    captured = capsys.readouterr()
    assert "src/app.py" in captured.out and "does not apply" in captured.out
    assert "nothing was committed" in captured.err
    assert user_state(repo) == user_before
    assert git_text(["rev-parse", "--verify", "--quiet", "refs/heads/x"], repo,
                    check=False).returncode != 0


def test_user_change_since_the_session_is_refused(session: str, repo: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    (repo / "src/util.py").write_bytes(b"VALUE = 3\n")
    assert main(["apply", session, "--branch", "x", "--commit"]) == 2
    captured = capsys.readouterr()
    assert "src/util.py" in captured.out and "since the session began" in captured.out


@pytest.mark.parametrize("name,why", [("bad..name", "not a valid branch name"),
                                      ("-x", "not a valid branch name"),
                                      ("master", "already exists")])
def test_bad_or_existing_branch_is_refused(session: str, repo: Path, name: str, why: str,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    git(["branch", "-q", "--", "master", "HEAD"], repo, check=False)
    assert main(["apply", session, f"--branch={name}", "--commit"]) == 2
    assert why in capsys.readouterr().err


def test_new_files_git_ignores_stay_out(session: str, repo: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    (repo / ".git" / "info" / "exclude").write_text("__pycache__/\n*.log\n")
    ws = open_workspace(repo, session_workspace_dir(session))
    ws.write("src/__pycache__/app.cpython-311.pyc", b"\x00cache")
    ws.write("run.log", b"noise\n")
    assert main(["apply", session, "--branch", "clean", "--commit", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["ignored"] == ["run.log", "src/__pycache__/app.cpython-311.pyc"]
    assert out["files"] == ["hello/greeting.txt", "src/app.py", "src/util.py"]
    listing = git_text(["ls-tree", "-r", "--name-only", out["commit"]], repo).stdout
    assert "pyc" not in listing and "run.log" not in listing


def test_a_session_that_changed_nothing_is_refused(
        session: str, repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    open_workspace(repo, session_workspace_dir(session)).discard()
    assert main(["apply", session, "--branch", "empty", "--commit"]) == 2
    assert "changed nothing" in capsys.readouterr().err


def test_commit_needs_branch(session: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["apply", session, "--commit"]) == 2
    assert "--commit and --per-step need --branch" in capsys.readouterr().err


def test_a_session_on_a_subdirectory_commits_at_the_right_paths(
        repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("CODELOOP_DATA_DIR", str(tmp_path / "data"))
    sub = repo / "src"
    store = SQLiteEventStore(event_store_path())
    store.create("s-sub")
    store.append("s-sub", [SessionStarted(task="Edit util", repo=str(sub), model="none",
                                          base_commit=head(repo))])
    ws = open_workspace(sub, session_workspace_dir("s-sub"))
    ws.write("util.py", b"VALUE = 3\n")
    ws.write("new.py", b"NEW = 1\n")
    assert main(["apply", "s-sub", "--branch", "sub", "--commit", "--json"]) == 0
    commit = json.loads(capsys.readouterr().out)["commit"]
    changed = git_text(["diff-tree", "-r", "--name-only", "--no-commit-id", commit],
                       repo).stdout.split()
    assert changed == ["src/new.py", "src/util.py"]
    assert git(["cat-file", "blob", f"{commit}:src/util.py"], repo).stdout == b"VALUE = 3\n"
