"""Policy decisions and human approvals inside the loop (hash-bound, remembered, paused)."""

from __future__ import annotations

from pathlib import Path

from codeloop.config import Settings
from codeloop.events import ApprovalGiven, ApprovalRequested, ToolCallData
from codeloop.session.setup import RuntimeParts, build_runner
from tests.session.helpers import TEST_CMD, call, make_repo, new_session, scripted, turn

ASK = Settings(approval_mode="ask")
SCRIPT = [turn(call("run", command=TEST_CMD)), turn(call("run", command=TEST_CMD)),
          turn(call("finish", summary="ran"))]


def results(store, sid: str) -> list:  # type: ignore[no-untyped-def,type-arg]
    return [e.event for e in store.read(sid) if e.event.type == "tool_call_finished"]


def test_approved_call_runs_and_a_denied_one_tells_the_model_why(tmp_path: Path) -> None:
    answers = iter([True, False])

    def approver(req: ApprovalRequested, call_: ToolCallData) -> ApprovalGiven:
        return ApprovalGiven(call_id=call_.id, approved=next(answers), digest=req.digest,
                             reason="not now")

    repo = make_repo(tmp_path)
    store, runner = new_session(tmp_path, repo, scripted(SCRIPT), ASK,
                                RuntimeParts(approver=approver))
    state = runner.run()
    first, second, _ = results(store, runner.session_id)
    assert first.ok is False and "exit code 1" in first.output  # it ran: the test fails
    assert second.ok is False and "denied this call: not now" in (second.error or "")
    assert state.status == "finished"


def test_remembered_approval_allows_the_same_command_later(tmp_path: Path) -> None:
    asked: list[str] = []

    def approver(req: ApprovalRequested, call_: ToolCallData) -> ApprovalGiven:
        asked.append(call_.id)
        return ApprovalGiven(call_id=call_.id, approved=True, digest=req.digest,
                             remember_rule=f"run({TEST_CMD})")

    repo = make_repo(tmp_path)
    store, runner = new_session(tmp_path, repo, scripted(SCRIPT), ASK,
                                RuntimeParts(approver=approver))
    runner.run()
    assert len(asked) == 1
    assert all("exit code" in r.output for r in results(store, runner.session_id)[:2])


def test_an_approval_for_another_call_does_not_run_this_one(tmp_path: Path) -> None:
    def approver(req: ApprovalRequested, call_: ToolCallData) -> ApprovalGiven:
        return ApprovalGiven(call_id=call_.id, approved=True, digest="0" * 64)

    repo = make_repo(tmp_path)
    store, runner = new_session(tmp_path, repo, scripted(SCRIPT), ASK,
                                RuntimeParts(approver=approver))
    runner.run()
    first = results(store, runner.session_id)[0]
    assert "approval was for a different call" in (first.error or "")
    kinds = [e.event.type for e in store.read(runner.session_id)]
    assert "command_ran" not in kinds


def test_unattended_ask_pauses_and_a_later_approval_resumes(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    model = scripted(SCRIPT)
    store, runner = new_session(tmp_path, repo, model, ASK)
    state = runner.run()
    assert state.status == "waiting_approval"
    assert store.get(runner.session_id).status == "waiting_approval"
    pending = list(state.pending_approvals.values())
    assert len(pending) == 1
    store.append(runner.session_id, [ApprovalGiven(call_id=pending[0].call_id, approved=True,
                                                   digest=pending[0].digest)])

    def approve_all(req: ApprovalRequested, call_: ToolCallData) -> ApprovalGiven:
        return ApprovalGiven(call_id=call_.id, approved=True, digest=req.digest)

    again = build_runner(store, runner.session_id, repo, ASK, model, base_dir=tmp_path / "data",
                         parts=RuntimeParts(approver=approve_all))
    assert again.run().status == "finished"
    assert sum(r.name == "run" for r in results(store, runner.session_id)) == 2


def test_deny_rule_blocks_a_command(tmp_path: Path) -> None:
    cfg = Settings(permissions={"deny": ["run(python3 *)"]})
    repo = make_repo(tmp_path)
    store, runner = new_session(tmp_path, repo, scripted(SCRIPT), cfg)
    runner.run()
    first = results(store, runner.session_id)[0]
    assert "denied by policy" in (first.error or "")
