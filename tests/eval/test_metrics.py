"""Trajectory metrics computed from a real session's event log (scripted model, real loop)."""

from __future__ import annotations

from pathlib import Path

from tests.session.helpers import TEST_CMD, call, make_repo, new_session, scripted, turn

from codeloop.eval.metrics import trajectory_metrics

SCRIPT = [
    turn(call("read_file", path="calc.py")),
    turn(call("read_file", path="tests/test_calc.py")),
    turn(call("run", command=TEST_CMD)),
    # A search text that is nowhere in the file: the edit engine refuses it.
    turn(call("edit_file", path="calc.py", old="return a * b", new="return a + b")),
    turn(call("edit_file", path="calc.py", old="return a - b", new="return a + b")),
    turn(call("run", command=TEST_CMD)),
    turn(call("finish", summary="add() now adds")),
]


def test_metrics_count_what_the_session_did(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    store, runner = new_session(tmp_path, repo, scripted(SCRIPT))
    assert runner.run().status == "finished"
    events = store.read(runner.session_id)
    m = trajectory_metrics(events, gold_files=["calc.py", "setup.py"])

    assert m.steps == 7 and m.model_calls == 7
    assert m.tools["read_file"].calls == 2 and m.tools["read_file"].errors == 0
    assert m.tools["edit_file"].calls == 2 and m.tools["edit_file"].errors == 1
    assert m.tools["run"].calls == 2 and m.tools["run"].errors == 1  # the failing test run
    assert m.edit_refusals == {"NoMatch": 1}
    assert m.edits_by_strategy == {"exact": 1}
    assert m.files_read == ["calc.py", "tests/test_calc.py"]
    assert m.files_edited == ["calc.py"]
    # Read calc.py and tests/test_calc.py; gold is calc.py and setup.py.
    assert m.exploration() == {"precision": 0.5, "recall": 0.5}
    first_edit = next(e for e in events if e.event.type == "file_edited")
    assert m.first_edit_s == round(first_edit.event.ts - events[0].event.ts, 3)
    assert 0 < m.first_edit_s <= m.wall_s
    assert m.policy_denials == 0 and m.loop_detections == 0 and m.budget_stops == 0
    doc = m.to_json()
    assert doc["tool_calls"] == 7 and doc["tool_errors"] == 2
    assert doc["tools"]["edit_file"]["error_rate"] == 0.5


def test_tokens_and_cost_split_by_model_and_role(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    store, runner = new_session(tmp_path, repo, scripted(SCRIPT))
    runner.run()
    events = store.read(runner.session_id)
    finished = [e.event for e in events if e.event.type == "model_call_finished"]
    m = trajectory_metrics(events)
    assert m.input_tokens == sum(f.usage.input_tokens for f in finished) > 0
    assert m.output_tokens == sum(f.usage.output_tokens for f in finished)
    assert sum(u.calls for u in m.by_model.values()) == len(finished)
    assert sum(u.calls for u in m.by_role.values()) == len(finished)
    assert m.exploration() == {"precision": None, "recall": None}


def test_an_empty_log_gives_zeroes() -> None:
    m = trajectory_metrics([])
    assert m.steps == 0 and m.tool_calls == 0 and m.first_edit_s is None
