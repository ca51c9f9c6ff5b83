"""The verifier's baseline is in the event log: a session killed after its first edit and
resumed still judges `finish` against the tests as they were before that edit."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from codeloop.config import Settings
from codeloop.events import BaselineRecorded, ToolCallFinished, VerificationRan
from codeloop.session.setup import build_runner, open_store
from tests.session.helpers import call, scripted, settings, turn
from tests.session.test_finish_gate import BREAK_MUL, UNBREAK_MUL, repo_with_two_tests

ROOT = Path(__file__).resolve().parents[2]
# test_add fails before the session and still fails at the end (not the session's doing);
# the first edit breaks test_mul, which passed before it.
SCRIPT = [turn(BREAK_MUL), turn(call("finish", summary="done")),
          turn(UNBREAK_MUL), turn(call("finish", summary="done now"))]


def gated(cfg: Settings) -> Settings:
    return cfg.model_copy(update={"verify_on_finish": True})


def test_baseline_taken_before_the_edit_survives_a_kill(tmp_path: Path) -> None:
    repo = repo_with_two_tests(tmp_path)
    data = tmp_path / "data"
    killed = subprocess.run(
        [sys.executable, "-m", "tests.session.baseline_driver", str(data), str(repo)],
        env={**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}"},
        capture_output=True, text=True, timeout=120, cwd=ROOT,
    )
    assert killed.returncode == -9, killed.stderr
    store = open_store(data)
    logged = [e.event for e in store.read("s1")]
    assert any(isinstance(e, BaselineRecorded) for e in logged), "no baseline before the kill"

    cfg = gated(settings())
    state = build_runner(store, "s1", repo, cfg, scripted(SCRIPT), base_dir=data).run()

    events = [e.event for e in store.read("s1")]
    finishes = [e for e in events if isinstance(e, ToolCallFinished) and e.name == "finish"]
    first, last = finishes[0], finishes[-1]
    # Judged against the pre-edit baseline: only the test the edit broke blocks; the test
    # that already failed is not blamed on the session (it would be with a baseline re-taken
    # on the edited files, or with none at all).
    assert not first.ok and "test_mul" in (first.error or "")
    assert "test_add" not in (first.error or "").split("Still failing")[0]
    assert last.ok and state.status == "finished"
    phases = [e.phase for e in events if isinstance(e, VerificationRan)]
    assert phases.count("baseline") == 1, phases
    assert state.finished is not None and "before edits" in state.finished.summary
