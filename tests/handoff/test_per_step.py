"""`apply ID --branch NAME --per-step`: one commit per plan step, files attributed from the
log's edits and plan progress."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codeloop.cli import main
from codeloop.events import FileEdited, PlanProposed, PlanStep, PlanStepChange, PlanUpdated
from codeloop.handoff.steps import group_by_step
from codeloop.session.store import SQLiteEventStore
from codeloop.workspace.locate import event_store_path
from codeloop.workspace.safe_git import git_text
from tests.handoff.conftest import head


def edited(path: str) -> FileEdited:
    return FileEdited(path=path, before_sha=None, after_sha=None, diff="")


def progress(**status: str) -> PlanUpdated:
    return PlanUpdated(changes=[PlanStepChange(id=k, status=v) for k, v in status.items()])  # type: ignore[arg-type]


PLAN = PlanProposed(call_id="p", summary="s", steps=[
    PlanStep(id="a", title="Change main", detail="Return 5."),
    PlanStep(id="b", title="Add greeting"), PlanStep(id="c", title="Check")])


def test_files_go_with_the_step_being_worked() -> None:
    events = [edited("early.txt"), PLAN, edited("x.py"), progress(a="done", b="in_progress"),
              edited("y.py"), edited("x.py"), progress(b="done")]
    groups = group_by_step(events, ["x.py", "y.py", "early.txt", "cmd.out"])
    assert [(g.title, g.files) for g in groups] == [
        ("Add greeting", ["x.py", "y.py"]), ("Other changes", ["early.txt", "cmd.out"])]
    assert group_by_step([edited("x.py")], ["x.py"]) == []


def test_one_commit_per_step(session: str, repo: Path,
                             capsys: pytest.CaptureFixture[str]) -> None:
    SQLiteEventStore(event_store_path()).append(session, [
        PLAN, edited("src/app.py"), progress(a="done", b="in_progress"),
        edited("hello/greeting.txt"), progress(b="done")])
    base = head(repo)
    assert main(["apply", session, "--branch", "steps", "--per-step", "--commit",
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    commits = out["commits"]
    assert [(c["message"].splitlines()[0], c["files"]) for c in commits] == [
        ("Change main", ["src/app.py"]), ("Add greeting", ["hello/greeting.txt"]),
        ("Other changes", ["src/util.py"])]
    assert "Return 5." in commits[0]["message"]
    assert "Codeloop-Session: s-handoff" in commits[1]["message"]
    chain = git_text(["rev-list", "--reverse", f"{base}..refs/heads/steps"], repo).stdout.split()
    assert chain == [c["commit"] for c in commits] and out["commit"] == chain[-1]
    first = git_text(["diff-tree", "-r", "--name-only", "--no-commit-id", chain[0]], repo)
    assert first.stdout.split() == ["src/app.py"]


def test_per_step_without_a_plan_is_one_commit(session: str,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["apply", session, "--branch", "one", "--per-step"]) == 0
    out = capsys.readouterr().out
    assert "in 1 commit(s)" in out and "does not split" in out
