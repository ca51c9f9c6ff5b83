"""Read-only calls of one turn run together, without roles too: results are recorded in the
order asked, and refused or invalid ones are answered without stopping the others."""

from __future__ import annotations

from pathlib import Path

from codeloop.events import ToolCallFinished, ToolCallStarted
from tests.session.helpers import call, make_repo, new_session, scripted, settings, turn

SCRIPT = [
    turn(call("read_file", "r1", path="calc.py"), call("grep", "g1", pattern="def add"),
         call("read_file", "r2", path="tests/test_calc.py")),
    turn(call("read_file", "bad1"), call("read_file", "bad2", path=3)),
    turn(call("finish", summary="read only")),
]


def test_reads_of_one_turn_are_recorded_in_order_and_invalid_ones_answered(
        tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    store, runner = new_session(tmp_path, repo, scripted(SCRIPT), settings())
    state = runner.run()
    assert state.status == "finished", state.finished
    events = [s.event for s in store.read(runner.session_id)]
    started = [e.call.id for e in events if isinstance(e, ToolCallStarted)]
    finished = [(e.call_id, e.ok) for e in events if isinstance(e, ToolCallFinished)]
    assert started[:3] == ["r1", "g1", "r2"]
    assert finished[:5] == [("r1", True), ("g1", True), ("r2", True), ("bad1", False),
                            ("bad2", False)]
    outputs = {e.call_id: e.output for e in events if isinstance(e, ToolCallFinished)}
    assert "return a - b" in outputs["r1"] and "calc.py" in outputs["g1"]
    assert "assertEqual" in outputs["r2"]
