"""Plan-driven execution with roles: the loop starts ready steps, checks `done_when` in the
sandbox, and a failed step makes the planner revise the plan."""

from __future__ import annotations

from pathlib import Path

from codeloop.config_tables import Budgets
from codeloop.events import (
    ApprovalGiven,
    ApprovalRequested,
    PlanRevised,
    PlanUpdated,
    StepChecked,
    StoredEvent,
    SystemNote,
    ToolCallData,
)
from codeloop.session.control import Control
from codeloop.session.setup import RuntimeParts, build_runner, open_store, start_session
from codeloop.session.state import fold
from tests.planner.helpers import Recording
from tests.session.helpers import FIXED, call, make_repo, new_session, turn
from tests.session.roles_helpers import (
    FIX,
    READ,
    edit,
    events_of,
    propose,
    roles_settings,
    turn_roles,
)

FIX_AGAIN = {**FIX, "title": "Make add() add: a + b, not a * b"}
# Step 2 ("fix") is done wrong, its check fails, the planner revises it, the coder finishes.
REPLAN_SCRIPT = [
    propose("p1", READ, FIX),                                               # planner
    turn(call("read_file", path="calc.py"), call("update_plan", status={"read": "done"})),
    turn(edit("return a - b", "return a * b")),                             # coder: wrong
    turn(call("update_plan", status={"fix": "done"})),                      # check fails
    propose("p2", READ, FIX_AGAIN),                                         # planner: revised
    turn(edit("return a * b", "return a + b")),                             # coder
    turn(call("finish", summary="add() adds; the step's check passes")),
]
REPLAN_ROLES = ["planner", "coder", "coder", "coder", "planner", "coder", "coder"]


def test_a_plan_whose_step_2_fails_is_revised_and_finishes(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    model = Recording(REPLAN_SCRIPT)
    store, runner = new_session(tmp_path, repo, model, roles_settings(review=False))
    state = runner.run()
    sid = runner.session_id
    assert state.status == "finished", state.finished
    assert (runner.ctx.workspace.path / "calc.py").read_text() == FIXED
    assert turn_roles(store, sid) == REPLAN_ROLES
    # The loop, not the model, starts each step, and gives the coder that step's context.
    started = [(c.id, e.by) for e in events_of(store, sid, PlanUpdated) for c in e.changes
               if c.status == "in_progress"]
    assert started == [("read", "loop"), ("fix", "loop"), ("fix", "loop")]
    briefs = [n.text for n in events_of(store, sid, SystemNote) if n.kind == "step"]
    assert "step fix" in briefs[1] and "Files: calc.py" in briefs[1]
    assert "Done when: command:" in briefs[1]
    # The planner is offered no edit tools, the coder no propose_plan.
    planner_tools = {t.name for t in model.requests[0].tools}
    coder_tools = {t.name for t in model.requests[1].tools}
    assert "propose_plan" in planner_tools and "edit_file" not in planner_tools
    assert "edit_file" in coder_tools and "propose_plan" not in coder_tools
    checks = events_of(store, sid, StepChecked)
    assert [(c.step_id, c.ok) for c in checks] == [("fix", False), ("fix", True)]
    assert "FAIL" in checks[0].detail or "Error" in checks[0].detail
    [revised] = events_of(store, sid, PlanRevised)
    assert revised.revision == 1 and "step fix failed" in revised.reason
    assert revised.diff == ["= read: Read calc.py (was done)",
                            "~ fix: Make add() add: a + b, not a * b (changed: title)"]
    # The done step is kept, the revised one worked again; the replan note showed the failure.
    assert state.plan is not None and state.plan.revision == 1
    assert [s.status for s in state.plan.steps] == ["done", "done"]
    replan_note = next(n for n in events_of(store, sid, SystemNote) if n.kind == "replan")
    assert replan_note.untrusted and "UNTRUSTED TOOL OUTPUT" in replan_note.text
    shown_to_planner = "\n".join(m.content for m in model.requests[4].messages)
    assert "plan must be revised" in shown_to_planner


def test_a_revision_waits_for_the_human_when_plans_need_approval(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    asked: list[str] = []

    def approver(req: ApprovalRequested, call_: ToolCallData) -> ApprovalGiven:
        asked.append(req.summary)
        return ApprovalGiven(call_id=call_.id, approved=True, digest=req.digest)

    cfg = roles_settings(review=False, plan_approval=True)
    store, runner = new_session(tmp_path, repo, Recording(REPLAN_SCRIPT), cfg,
                                RuntimeParts(approver=approver))
    state = runner.run()
    assert state.status == "finished", state.finished
    assert len(asked) == 2 and all(s.startswith("plan: fix add()") for s in asked)
    [revised] = events_of(store, runner.session_id, PlanRevised)
    assert revised.needs_approval
    assert state.proposals["p2"].approval == "approved"


def test_the_replan_budget_ends_the_session_stuck(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    store, runner = new_session(tmp_path, repo, Recording(REPLAN_SCRIPT),
                                roles_settings(review=False, max_replans=0))
    state = runner.run()
    assert state.status == "stuck"
    assert state.finished is not None and "max_replans" in state.finished.reason
    assert turn_roles(store, runner.session_id) == REPLAN_ROLES[:4]


def test_a_step_whose_budget_is_spent_fails(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    dawdle = turn(call("read_file", path="calc.py"))
    script = [propose("p1", {**READ, "done_when": ""}), dawdle, dawdle]
    # 10 turns, a fifth of them per step: two coder turns, then the step fails.
    cfg = roles_settings(review=False, max_replans=0, step_share=0.2,
                         budgets=Budgets(max_steps=10))
    store, runner = new_session(tmp_path, repo, Recording(script), cfg)
    state = runner.run()
    assert state.status == "stuck", state.finished
    failed = [c for e in events_of(store, runner.session_id, PlanUpdated) for c in e.changes
              if c.status == "failed"]
    assert len(failed) == 1 and "budget (turns" in (failed[0].note or "")


def test_a_resumed_session_continues_the_same_step_in_the_same_phase(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    cfg = roles_settings(review=False)
    store = open_store(tmp_path / "data")
    sid = start_session(store, "make the tests pass", repo, cfg, "scripted")
    control = Control()

    def pause_on_failed_check(stored: StoredEvent) -> None:
        if isinstance(stored.event, StepChecked) and not stored.event.ok:
            control.pause.set()

    first = build_runner(store, sid, repo, cfg, Recording(REPLAN_SCRIPT),
                         base_dir=tmp_path / "data", on_event=pause_on_failed_check,
                         parts=RuntimeParts(control=control))
    assert first.run().status == "paused"
    paused = fold(store.read(sid))
    assert paused.plan is not None and paused.roles.replan_reason is not None
    # A new process: the phase (replan) and the plan come from the fold of the log.
    model = Recording(REPLAN_SCRIPT)
    again = build_runner(store, sid, repo, cfg, model, base_dir=tmp_path / "data")
    state = again.run()
    assert state.status == "finished", state.finished
    assert turn_roles(store, sid) == REPLAN_ROLES
    assert model.requests[0].step == 4 and "propose_plan" in {t.name for t in
                                                               model.requests[0].tools}
    assert len(events_of(store, sid, PlanRevised)) == 1


def test_the_planners_share_of_the_budget_is_enforced(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    look = turn(call("read_file", path="calc.py"))
    script = [look, look, propose("p1", READ, FIX)]
    # 8 turns, a quarter of them the planner's: two turns of reading, and no plan.
    cfg = roles_settings(review=False, budgets=Budgets(max_steps=8))
    store, runner = new_session(tmp_path, repo, Recording(script), cfg)
    state = runner.run()
    assert state.status == "budget_exceeded"
    assert state.finished is not None and "planner's budget (turns)" in state.finished.reason
    assert turn_roles(store, runner.session_id) == ["planner", "planner"]
