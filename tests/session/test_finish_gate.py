"""`finish` is gated by the verifier: new failures come back to the model; repeats escalate."""

from __future__ import annotations

from pathlib import Path

from codeloop.config import Settings
from tests.session.helpers import call, make_repo, new_session, scripted, turn

# A second test that passes before the session and that a bad edit breaks.
EXTRA_TEST = ("import unittest\nfrom calc import mul\n\n\nclass M(unittest.TestCase):\n"
              "    def test_mul(self):\n        self.assertEqual(mul(2, 3), 6)\n")


def repo_with_two_tests(tmp: Path) -> Path:
    repo = make_repo(tmp)
    (repo / "tests" / "__init__.py").write_text("")
    (repo / "calc.py").write_text("def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n"
                                  "    return a * b\n")
    (repo / "tests" / "test_mul.py").write_text(EXTRA_TEST)
    return repo


BREAK_MUL = call("edit_file", path="calc.py", old="return a * b", new="return a ** b")
FIX_ADD = call("edit_file", path="calc.py", old="return a - b", new="return a + b")
UNBREAK_MUL = call("edit_file", path="calc.py", old="return a ** b", new="return a * b")


def finish_results(store, sid: str) -> list:  # type: ignore[no-untyped-def,type-arg]
    return [e.event for e in store.read(sid)
            if e.event.type == "tool_call_finished" and e.event.name == "finish"]


def test_new_failure_blocks_finish_until_fixed(tmp_path: Path) -> None:
    repo = repo_with_two_tests(tmp_path)
    script = [turn(FIX_ADD), turn(BREAK_MUL), turn(call("finish", summary="done")),
              turn(UNBREAK_MUL), turn(call("finish", summary="done now"))]
    store, runner = new_session(tmp_path, repo, scripted(script), Settings())
    state = runner.run()
    first, second = finish_results(store, runner.session_id)
    assert not first.ok and "test_mul" in (first.error or "")
    assert second.ok and state.status == "finished"
    assert state.finished is not None and "Verification summary" in state.finished.summary
    phases = [e.event.phase for e in store.read(runner.session_id)  # type: ignore[union-attr]
              if e.event.type == "verification_ran"]
    assert phases[0] == "baseline" and "final" in phases


def test_same_failure_after_a_fix_attempt_goes_to_a_human(tmp_path: Path) -> None:
    repo = repo_with_two_tests(tmp_path)
    noop = call("edit_file", path="calc.py", old="return a + b", new="return (a + b)")
    script = [turn(FIX_ADD), turn(BREAK_MUL), turn(call("finish", summary="done")),
              turn(noop), turn(call("finish", summary="really done")),
              turn(call("finish", summary="again"))]
    _store, runner = new_session(tmp_path, repo, scripted(script), Settings())
    state = runner.run()
    assert state.status == "needs_human"
    assert state.finished is not None and "test_mul" in state.finished.reason


def test_gate_can_be_turned_off(tmp_path: Path) -> None:
    repo = repo_with_two_tests(tmp_path)
    script = [turn(BREAK_MUL), turn(call("finish", summary="done"))]
    store, runner = new_session(tmp_path, repo, scripted(script), Settings(verify_on_finish=False))
    assert runner.run().status == "finished"
    assert not any(e.event.type == "verification_ran" for e in store.read(runner.session_id))
