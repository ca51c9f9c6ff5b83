"""`run_agent` goes through the same assembly as `codeloop run`: overlay workspace, bwrap with
the task's virtualenv, the policy, and the verifier's finish gate with the task's test command."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from tests.eval.conftest import FakeTask, git
from tests.session.helpers import call, scripted, turn

from codeloop.config import Settings
from codeloop.eval.swebench.agent import AgentRun, run_agent
from codeloop.eval.swebench.checkout import apply_patch, checkout
from codeloop.eval.swebench.envs import TaskEnv
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


def test_finish_is_gated_by_the_task_tests_in_the_sandbox(
        fake_task: FakeTask, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    repo = _task_checkout(fake_task, tmp_path)
    before = git("status", "--porcelain", cwd=repo)
    model = scripted([turn(FIX_ADD), turn(BREAK_SUB), turn(call("finish", summary="fixed")),
                      turn(UNBREAK_SUB), turn(call("finish", summary="fixed, sub too"))])
    state_dir = tmp_path / "session"
    run = run_agent(fake_task.inst, model, repo, fake_task.env, state_dir, Settings())

    # The first finish came back: test_sub passed before the edits and failed after them.
    assert run.finish_blocked == 1 and run.status == "finished", run
    # The harness makes its session directory private itself: no note on every instance.
    assert "made it 0700" not in caplog.text
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


# An editable install's two writes, without pip (which would need the network here): the
# project's metadata into its tree, and a path entry into the virtualenv.
EDITABLE_INSTALL = (
    "mkdir -p calc.egg-info && echo 'Name: calc' > calc.egg-info/PKG-INFO && "
    "echo \"$PWD\" > \"$(python -c 'import sysconfig; print(sysconfig.get_paths()[\"purelib\"])')"
    "/calc-editable.pth\""
)


def test_the_install_points_at_the_workspace_and_leaks_nowhere(fake_task: FakeTask,
                                                               tmp_path: Path) -> None:
    if not probe().isolation_available:
        pytest.skip("the sandboxed install needs bwrap")
    repo = _task_checkout(fake_task, tmp_path)
    (repo / ".gitignore").write_text("*.egg-info/\n")
    venv = tmp_path / "env" / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", "--system-site-packages",
                    str(venv)], check=True)
    env = TaskEnv(replace(fake_task.env.spec, install=EDITABLE_INSTALL), venv.parent, "test")
    # As the evaluation does: the checkout is installed first, then the session reinstalls
    # the project from its workspace.
    assert env.prepare(repo).ok
    before = git("status", "--porcelain", "--ignored", cwd=repo)
    metadata = (repo / "calc.egg-info" / "PKG-INFO").stat()
    where = "import calc, os; print('CALC AT', os.path.dirname(calc.__file__))"
    model = scripted([turn(call("run", command=f"cd / && python -c \"{where}\"")),
                      turn(call("finish", summary="looked"))])
    state_dir = tmp_path / "session"
    run = run_agent(fake_task.inst, model, repo, env, state_dir, Settings())

    assert run.note == "" and run.status == "finished"
    output = next(e.output for e in _events(run, state_dir)
                  if isinstance(e, ToolCallFinished) and e.name == "run")
    workspace = output.split("CALC AT ", 1)[1].split()[0]
    assert Path(workspace) != repo and Path(workspace).name == "merged"
    # Neither the user's checkout nor the diff sees the install.
    assert git("status", "--porcelain", "--ignored", cwd=repo) == before
    assert (repo / "calc.egg-info" / "PKG-INFO").stat().st_mtime_ns == metadata.st_mtime_ns
    assert run.diff == ""
