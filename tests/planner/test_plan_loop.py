"""Plans inside the loop: proposed, paused for a person, approved or denied, worked, resumed."""

from __future__ import annotations

from pathlib import Path

from codeloop.config import Settings
from codeloop.events import ApprovalGiven, ApprovalRequested, ToolCallData
from codeloop.session.setup import RuntimeParts, build_runner
from codeloop.session.state import fold
from codeloop.session.store import SQLiteEventStore
from tests.planner.helpers import STEPS, WORK, Recording, propose
from tests.session.helpers import FIXED, make_repo, new_session

ASK_PLANS = Settings(plan_approval=True)


def types(store: SQLiteEventStore, sid: str) -> list[str]:
    return [e.event.type for e in store.read(sid)]


def answer(approved: bool, reason: str = "", remember: str | None = None):  # type: ignore[no-untyped-def]
    asked: list[str] = []

    def approver(req: ApprovalRequested, call_: ToolCallData) -> ApprovalGiven:
        asked.append(call_.id)
        return ApprovalGiven(call_id=call_.id, approved=approved, digest=req.digest,
                             reason=reason, remember_rule=remember)

    return approver, asked


def test_unattended_plan_pauses_then_an_approval_lets_the_work_go_on(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    model = Recording([propose("p1"), *WORK])
    store, runner = new_session(tmp_path, repo, model, ASK_PLANS)
    state = runner.run()
    assert state.status == "waiting_approval"
    assert store.get(runner.session_id).status == "waiting_approval"
    pending = state.pending_plan
    assert pending is not None and pending.approval == "pending"
    assert [s.id for s in pending.steps] == ["read", "fix", "test"]
    assert state.plan is None and len(model.requests) == 1
    [request] = state.pending_approvals.values()
    assert request.call_id == "p1" and request.name == "propose_plan"

    store.append(runner.session_id, [ApprovalGiven(call_id="p1", approved=True,
                                                   digest=request.digest)])
    again = build_runner(store, runner.session_id, repo, ASK_PLANS, model,
                         base_dir=tmp_path / "data")
    final = again.run()
    assert final.status == "finished"
    assert (again.ctx.workspace.path / "calc.py").read_text() == FIXED
    assert final.plan is not None and final.plan.approval == "approved"
    assert [s.status for s in final.plan.steps] == ["done", "done", "done"]
    # The task context, built in the background, may arrive after it on a loaded machine.
    assert any("The plan is accepted" in m.content for m in model.requests[1].messages[-2:])
    # The progress note comes after the tool result (a context refresh may follow it).
    assert any("[x] read: Read calc.py" in m.content for m in model.requests[2].messages[-3:])
    assert types(store, runner.session_id).count("plan_updated") == 2


def test_denied_plan_reason_reaches_the_model_which_proposes_again(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    revised = [*STEPS[:2], {"id": "test", "title": "Run tests/test_calc.py",
                            "depends_on": ["fix"]}]
    model = Recording([propose("p1"), propose("p2", steps=revised), *WORK])
    answers = iter([(False, "name the test file"), (True, "")])

    def approver(req: ApprovalRequested, call_: ToolCallData) -> ApprovalGiven:
        approved, reason = next(answers)
        return ApprovalGiven(call_id=call_.id, approved=approved, digest=req.digest,
                             reason=reason)

    _, runner = new_session(tmp_path, repo, model, ASK_PLANS,
                                RuntimeParts(approver=approver))
    final = runner.run()
    assert final.status == "finished"
    shown = "\n".join(m.content for m in model.requests[1].messages)
    assert "the user rejected this plan: name the test file" in shown
    assert final.proposals["p1"].approval == "rejected"
    assert final.plan is not None and final.plan.call_id == "p2"
    assert final.plan.steps[2].title == "Run tests/test_calc.py"


def test_resume_and_restart_keep_waiting_for_a_pending_plan(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    model = Recording([propose("p1"), *WORK])
    _, runner = new_session(tmp_path, repo, model, ASK_PLANS)
    assert runner.run().status == "waiting_approval"
    # A new process: a fresh store on the same file, a fresh runner, still nobody to answer.
    reopened = SQLiteEventStore(tmp_path / "data" / "events.sqlite")
    again = build_runner(reopened, runner.session_id, repo, ASK_PLANS, model,
                         base_dir=tmp_path / "data")
    state = again.run()
    assert state.status == "waiting_approval" and state.pending_plan is not None
    kinds = types(reopened, runner.session_id)
    assert kinds.count("plan_proposed") == 1 and kinds.count("approval_requested") == 1
    assert len(model.requests) == 1, "the model is not called while the plan waits"
    approver, asked = answer(True)
    third = build_runner(reopened, runner.session_id, repo, ASK_PLANS, model,
                         base_dir=tmp_path / "data", parts=RuntimeParts(approver=approver))
    assert third.run().status == "finished" and asked == ["p1"]


def test_without_plan_approval_a_plan_is_adopted_at_once(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    store, runner = new_session(tmp_path, repo, Recording([propose("p1"), *WORK]))
    state = runner.run()
    assert state.status == "finished"
    assert "approval_requested" not in types(store, runner.session_id)
    proposed = next(e.event for e in store.read(runner.session_id)
                    if e.event.type == "plan_proposed")
    assert proposed.needs_approval is False  # type: ignore[union-attr]
    assert state.plan is not None and state.plan.done == 3


def test_approval_mode_ask_asks_for_plans_unless_told_otherwise() -> None:
    assert Settings(approval_mode="ask").plans_need_approval
    assert not Settings(approval_mode="ask", plan_approval=False).plans_need_approval
    assert not Settings().plans_need_approval
    assert Settings(plan_approval=True).plans_need_approval


def test_approve_and_remember_stops_asking_for_plans(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    model = Recording([propose("p1"), propose("p2", summary="a second plan"), *WORK])
    approver, asked = answer(True, remember="propose_plan")
    _, runner = new_session(tmp_path, repo, model, ASK_PLANS,
                                RuntimeParts(approver=approver))
    final = runner.run()
    assert final.status == "finished" and asked == ["p1"]
    assert final.plan is not None and final.plan.summary == "a second plan"


def test_update_without_a_plan_is_an_error_the_model_reads(tmp_path: Path) -> None:
    from tests.planner.helpers import update
    from tests.session.helpers import call, turn

    repo = make_repo(tmp_path)
    model = Recording([turn(update(("read", "done"))), turn(call("finish", summary="x"))])
    store, runner = new_session(tmp_path, repo, model)
    runner.run()
    assert "no accepted plan to update" in model.requests[1].messages[-1].content
    assert fold(store.read(runner.session_id)).plan is None


def test_the_plan_sits_after_the_task_and_stays_fixed_while_progress_is_made(tmp_path: Path
                                                                            ) -> None:
    repo = make_repo(tmp_path)
    model = Recording([propose("p1"), *WORK])
    _, runner = new_session(tmp_path, repo, model)
    assert runner.run().status == "finished"
    first, *later = model.requests
    assert not any(m.name == "plan" for m in first.messages)
    sections = [[m for m in r.messages if m.name == "plan"] for r in later]
    assert all(len(s) == 1 for s in sections)
    assert len({s[0].content for s in sections}) == 1, "progress must not change the section"
    assert "fix: Make add() add (after: read)" in sections[0][0].content
    roles = [m.name or m.role for m in later[-1].messages]
    task_at = next(i for i, m in enumerate(later[-1].messages) if "Task:" in m.content)
    assert roles.index("plan") == task_at + 1
