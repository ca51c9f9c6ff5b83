"""`codeloop pr ID`: the title and body from the log, and `--open` through `gh` (absent, and
a fake `gh` on PATH that records what it was given)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from codeloop.cli import main
from codeloop.events import (
    ModelCallFinished,
    PlanProposed,
    PlanStep,
    SessionFinished,
    VerificationRan,
)
from codeloop.session.store import SQLiteEventStore
from codeloop.workspace.locate import event_store_path
from codeloop.workspace.safe_git import git


@pytest.fixture
def finished(session: str) -> str:
    store = SQLiteEventStore(event_store_path())
    store.append(session, [
        PlanProposed(call_id="p1", summary="Fix main", steps=[
            PlanStep(id="1", title="Change the return value"),
            PlanStep(id="2", title="Add the greeting")]),
        VerificationRan(phase="baseline", commands=["pytest -q"], passed=3, failed=1,
                        still_failing=["tests/test_app.py::test_main"]),
        ModelCallFinished(step=1, model="scripted", cost_usd=0.0123, text="done"),
        VerificationRan(phase="final", commands=["pytest -q"], passed=4, failed=0,
                        fixed_failures=["tests/test_app.py::test_main"]),
        SessionFinished(status="finished", summary="main returns 5 now"),
    ])
    return session


def test_pr_text_has_task_plan_changes_verification_cost(
        finished: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["pr", finished]) == 0
    text = capsys.readouterr().out
    title, _, body = text.partition("\n\n")
    assert title == "Return 5 from main"
    for part in ("## Task", "and add a greeting file", "## Plan", "Change the return value",
                 "## What changed", "`src/app.py` (modified)", "`src/util.py` (deleted)",
                 "`hello/greeting.txt` (added)", "before the change: 3 passed, 1 failed",
                 "after the change: 4 passed, 0 failed", "fixed: `tests/test_app.py::test_main`",
                 "## Cost", "$0.0123 over 1 model call(s)", "main returns 5 now"):
        assert part in body, part


def test_pr_out_file(finished: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "pr.md"
    assert main(["pr", finished, "--out", str(out)]) == 0
    assert out.read_text().startswith("Return 5 from main\n\n## Task\n")
    assert capsys.readouterr().out == ""


def test_open_without_gh_is_a_clear_error(finished: str, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "nobin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    assert main(["pr", finished, "--open", "--github-repo", "acme/widget"]) == 2
    assert "`gh` (GitHub's CLI) is not installed" in capsys.readouterr().err


def test_open_needs_a_branch(finished: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                             capsys: pytest.CaptureFixture[str]) -> None:
    _fake_gh(tmp_path, monkeypatch)
    assert main(["pr", finished, "--open", "--github-repo", "acme/widget"]) == 2
    assert "no branch" in capsys.readouterr().err


def _fake_gh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bin_dir = tmp_path / "fakebin"
    bin_dir.mkdir()
    record = tmp_path / "gh-call.json"
    gh = bin_dir / "gh"
    gh.write_text(f"""#!{sys.executable}
import json, os, sys
args = sys.argv[1:]
body = open(args[args.index("--body-file") + 1]).read()
json.dump({{"args": args, "body": body, "cwd": os.getcwd()}}, open({str(record)!r}, "w"))
print("https://github.com/acme/widget/pull/7")
""")
    gh.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return record


def test_open_passes_the_right_arguments_to_gh(finished: str, repo: Path, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    record = _fake_gh(tmp_path, monkeypatch)
    git(["remote", "add", "origin", "git@github.com:acme/widget.git"], repo)
    assert main(["apply", finished, "--branch", "codeloop/fix", "--commit"]) == 0
    capsys.readouterr()
    assert main(["pr", finished, "--open", "--base", "main", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["url"] == "https://github.com/acme/widget/pull/7"
    call = json.loads(record.read_text())
    args = call["args"]
    assert args[:2] == ["pr", "create"]
    pairs = {args[i]: args[i + 1] for i in range(2, len(args), 2)}
    assert pairs["--repo"] == "acme/widget" and pairs["--head"] == "codeloop/fix"
    assert pairs["--base"] == "main" and pairs["--title"] == "Return 5 from main"
    assert "## How it was verified" in call["body"] and call["body"] == out["body"]
    # gh never runs inside the repository (it would read the repository's git config).
    assert not Path(call["cwd"]).resolve().is_relative_to(repo.resolve())
    store = SQLiteEventStore(event_store_path())
    opened = [e.event for e in store.read(finished) if e.event.type == "pull_request_opened"]
    assert [(e.branch, e.url) for e in opened] == [  # type: ignore[union-attr]
        ("codeloop/fix", "https://github.com/acme/widget/pull/7")]
