"""The reviewer: it gets the whole diff when the coder finishes, runs the tests, and sends
back a diff that breaks one; the coder fixes it and the second review approves."""

from __future__ import annotations

from pathlib import Path

from codeloop.events import (
    ReviewGiven,
    ReviewRequested,
    SessionFinished,
    SystemNote,
    ToolCallFinished,
)
from tests.planner.helpers import Recording
from tests.session.helpers import FIXED, call, make_repo, new_session, turn
from tests.session.roles_helpers import edit, events_of, propose, roles_settings, turn_roles

STEP = {"id": "fix", "title": "Make add() add", "files": ["calc.py"]}
REASONS = "tests/test_calc.py::test_add fails: add(2, 3) gives 6; it must add"
REVIEW_SCRIPT = [
    propose("p1", STEP),                                                    # planner
    turn(edit("return a - b", "return a * b")),                             # coder: wrong
    turn(call("finish", summary="add() fixed")),                            # to the reviewer
    turn(call("run_tests", target="tests/test_calc.py"),                    # reviewer
         call("edit_file", path="calc.py", old="a * b", new="a + b")),      # not its tool
    turn(call("review", verdict="send_back", reasons=REASONS)),
    turn(edit("return a * b", "return a + b")),                             # coder fixes
    turn(call("finish", summary="add() adds now; tests pass")),
    turn(call("run_tests", target="tests/test_calc.py")),                   # reviewer
    turn(call("review", verdict="approve")),
]
REVIEW_ROLES = ["planner", "coder", "coder", "reviewer", "reviewer", "coder", "coder",
                "reviewer", "reviewer"]


def test_the_reviewer_sends_back_a_diff_that_breaks_a_test_and_the_coder_fixes_it(
        tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    model = Recording(REVIEW_SCRIPT)
    # No verifier at finish: the reviewer is what catches the broken test.
    store, runner = new_session(tmp_path, repo, model, roles_settings(verify_on_finish=False))
    state = runner.run()
    sid = runner.session_id
    assert state.status == "finished", state.finished
    assert (runner.ctx.workspace.path / "calc.py").read_text() == FIXED
    assert turn_roles(store, sid) == REVIEW_ROLES
    assert [r.round for r in events_of(store, sid, ReviewRequested)] == [1, 2]
    verdicts = [(g.round, g.verdict) for g in events_of(store, sid, ReviewGiven)]
    assert verdicts == [(1, "send_back"), (2, "approve")]
    results = {e.call_id: e for e in events_of(store, sid, ToolCallFinished)}
    # The reviewer's test run saw the failure; its edit was refused, not run.
    assert "test_add" in results["s3_0"].output
    assert not results["s3_1"].ok and "not a tool of the reviewer" in (results["s3_1"].error
                                                                       or "")
    # The reviewer was shown the diff (fenced) and offered no edit tools.
    brief = next(n for n in events_of(store, sid, SystemNote) if n.kind == "review_brief")
    assert brief.untrusted and "-    return a - b" in brief.text and "a * b" in brief.text
    reviewer_tools = {t.name for t in model.requests[3].tools}
    assert {"run_tests", "review", "read_file"} <= reviewer_tools
    assert not reviewer_tools & {"edit_file", "write_file", "run", "finish"}
    # The reasons reached the coder, and the session ended with the coder's summary.
    shown = "\n".join(m.content for m in model.requests[5].messages)
    assert "The reviewer sent your work back" in shown and REASONS in shown
    [end] = events_of(store, sid, SessionFinished)
    assert end.summary.startswith("add() adds now")


def test_after_k_send_backs_the_finish_is_not_reviewed_again(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    script = REVIEW_SCRIPT[:7]  # the second finish ends the session: K = 1 is used up
    store, runner = new_session(tmp_path, repo, Recording(script),
                                roles_settings(verify_on_finish=False, max_reviews=1))
    state = runner.run()
    assert state.status == "finished", state.finished
    assert len(events_of(store, runner.session_id, ReviewRequested)) == 1


def test_without_review_finish_ends_the_session_at_once(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    script = [propose("p1", STEP), turn(edit("return a - b", "return a + b")),
              turn(call("finish", summary="fixed"))]
    store, runner = new_session(tmp_path, repo, Recording(script),
                                roles_settings(review=False))
    state = runner.run()
    assert state.status == "finished", state.finished
    assert not events_of(store, runner.session_id, ReviewRequested)
    assert state.plan is not None and [s.status for s in state.plan.steps] == ["done"]


def test_the_reviewers_diff_has_no_secret_in_the_log_or_the_prompt(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    key = "AKIA" + "QWERTYUIOPASDFGH"
    script = [propose("p1", STEP),
              turn(edit("return a - b", f"return a + b  # {key}")),
              turn(call("finish", summary="fixed")),
              turn(call("review", verdict="approve"))]
    model = Recording(script)
    store, runner = new_session(tmp_path, repo, model, roles_settings(verify_on_finish=False))
    assert runner.run().status == "finished"
    brief = next(n for n in events_of(store, runner.session_id, SystemNote)
                 if n.kind == "review_brief")
    assert "return a + b" in brief.text and key not in brief.text
    assert key not in "\n".join(m.content for m in model.requests[3].messages)
