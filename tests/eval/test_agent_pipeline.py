"""`run_agent` goes through the same assembly as `codeloop run`: overlay workspace, bwrap with
the task's virtualenv, the policy, and the verifier's finish gate with the task's test command."""

from __future__ import annotations

from pathlib import Path

from tests.eval.conftest import FakeTask, git
from tests.session.helpers import call, scripted, turn

from codeloop.config import Settings
from codeloop.eval.swebench.agent import AgentRun, run_agent
from codeloop.eval.swebench.checkout import apply_patch, checkout
from codeloop.events import BaselineRecorded, PolicyDecided, ToolCallFinished, VerificationRan
from codeloop.sandbox.probe import probe
from codeloop.session.store import SQLiteEventStore

FIX_ADD = call("edit_file", path="calc.py", old="return a - b\n\n\ndef sub",
               new="return a + b\n\n\ndef sub")
BREAK_SUB = call("edit_file", path="calc.py", old="def sub(a, b):\n    return a - b",
                 new="def sub(a, b):\n    return a + b")
UNBREAK_SUB = call("edit_file", path="calc.py", old="def sub(a, b):\n    return a + b",
                   new="def sub(a, b):\n    return a - b")


def _task_checkout(task: FakeTask, tmp: Path) -> Path:
    repo = checkout(task.mirror, task.inst.base_commit, tmp / "repo")
    apply_patch(repo, task.inst.test_patch, "test patch")
    return repo


def _events(run: AgentRun, state_dir: Path) -> list[object]:
    return [e.event for e in SQLiteEventStore(state_dir / "events.sqlite").read(run.session_id)]


def test_finish_is_gated_by_the_task_tests_in_the_sandbox(fake_task: FakeTask,
                                                          tmp_path: Path) -> None:
    repo = _task_checkout(fake_task, tmp_path)
    before = git("status", "--porcelain", cwd=repo)
    model = scripted([turn(FIX_ADD), turn(BREAK_SUB), turn(call("finish", summary="fixed")),
                      turn(UNBREAK_SUB), turn(call("finish", summary="fixed, sub too"))])
    state_dir = tmp_path / "session"
    run = run_agent(fake_task.inst, model, repo, fake_task.env, state_dir, Settings())

    # The first finish came back: test_sub passed before the edits and failed after them.
    assert run.finish_blocked == 1 and run.status == "finished", run
    if probe().isolation_available:
        assert run.sandbox == "bwrap" and run.note == "", run.note
    else:
        assert run.sandbox == "subprocess" and run.note.startswith("no sandbox")
    assert "+    return a + b" in run.diff and "def sub" in run.diff
    assert run.diff.count("diff --git") == 1 and "calc.py" in run.diff
    # The session wrote nothing into the task checkout (the overlay's user side).
    assert git("status", "--porcelain", cwd=repo) == before
    events = _events(run, state_dir)
    verifications = [e for e in events if isinstance(e, VerificationRan)]
    assert verifications[0].phase == "baseline"
    assert any("-m pytest" in c and "test_calc.py" in c for c in verifications[0].commands)
    assert any(isinstance(e, BaselineRecorded) for e in events)
    assert all(e.decision == "allow" for e in events if isinstance(e, PolicyDecided))
    assert run.verify_s > 0


def test_unchanged_files_and_command_reuse_the_last_result(fake_task: FakeTask,
                                                           tmp_path: Path) -> None:
    repo = _task_checkout(fake_task, tmp_path)
    # run_tests on the baseline's target, then finish: the gate's wider run is the same
    # command on the same files, so its result is reused instead of run again.
    model = scripted([turn(FIX_ADD), turn(call("run_tests", target="test_calc.py")),
                      turn(call("finish", summary="fixed"))])
    state_dir = tmp_path / "session"
    run = run_agent(fake_task.inst, model, repo, fake_task.env, state_dir, Settings())
    assert run.status == "finished" and run.finish_blocked == 0
    final = [e for e in _events(run, state_dir)
             if isinstance(e, VerificationRan) and e.phase == "final"]
    assert final and "reused" in final[-1].summary


def test_calls_the_policy_would_ask_about_are_refused_unattended(fake_task: FakeTask,
                                                                tmp_path: Path) -> None:
    repo = _task_checkout(fake_task, tmp_path)
    # Test output is untrusted content; after it, a command reaching the network needs a
    # person's approval, and an evaluation has nobody to ask.
    model = scripted([turn(call("run_tests", target="test_calc.py")),
                      turn(call("run", command="curl -s https://example.com/")),
                      turn(call("finish", summary="nothing to do"))])
    state_dir = tmp_path / "session"
    run = run_agent(fake_task.inst, model, repo, fake_task.env, state_dir, Settings())
    events = _events(run, state_dir)
    refused = [e for e in events if isinstance(e, ToolCallFinished) and e.name == "run"]
    assert refused and not refused[0].ok
    assert "unattended evaluation" in (refused[0].error or "")
    assert run.status == "finished"
