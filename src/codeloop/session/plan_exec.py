"""The conductor of a session with roles (`[roles] enabled`): planner, coder and reviewer take
turns on one log, and the loop executes the plan's steps one at a time.

The phase comes from the folded state alone (`phase`), so a resumed session continues in the
same phase with the same step. Between turns `supervise` does what the loop decides itself:
brief the planner, start the next ready step with its context, run a step's `done_when`
check, fail a step whose budget is spent, ask for a revision, hand the diff to the reviewer.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from codeloop.config_tables import Budgets, RolesSettings
from codeloop.events import PlanStep, PlanStepChange, PlanUpdated, StepChecked, SystemNote
from codeloop.llm.router import Phase
from codeloop.llm.types import ToolSpec
from codeloop.planner.dag import DoneWhen, current_step, ready_steps, unfinished
from codeloop.planner.model import Plan
from codeloop.planner.render import render_plan
from codeloop.policy.untrusted import inspect, wrap_untrusted
from codeloop.session.review import ReviewDesk
from codeloop.session.role_budgets import role_use, step_use
from codeloop.session.roles_state import PLANNER_NOTE, REPLAN_NOTE, step_key
from codeloop.session.state import SessionState
from codeloop.tools.base import Observation, Tool, ToolContext
from codeloop.tools.registry import ToolRegistry
from codeloop.tools.run import RunArgs, RunTool
from codeloop.tools.verify_tools import RunTests, RunTestsArgs

# Tools a role never gets, whatever their tier: planning and reviewing are not the coder's
# job; the planner and the reviewer do not finish or report step progress.
_NOT_FOR = {
    "planner": {"finish", "update_plan", "review", "explore"},
    "reviewer": {"finish", "update_plan", "propose_plan", "explore"},
    "coder": {"propose_plan", "review"},
}
# The execute-tier tools the reviewer may run; everything else it gets is read-only.
_REVIEWER_RUNS = {"run_tests", "run_checks"}
_ROLE_OF_PHASE: dict[Phase, str] = {"plan": "planner", "replan": "planner", "work": "coder",
                                    "review": "reviewer"}
_DETAIL_CHARS = 3000

PLANNER_BRIEF = """\
You are the planner. Explore the repository with the read-only tools, then call propose_plan
with a plan the coder can execute step by step: each step has a short id, a title (its
goal), the files it touches, depends_on, and done_when — "tests: TARGET" (those tests pass),
"command: CMD" (the command exits 0), "review: CRITERION" (the reviewer judges) or "" (the
coder's word). You cannot edit files."""

STEP_BRIEF = """\
Work on step {id} of the plan now, and only on it: {title}
{detail}Files: {files}
Done when: {done_when}
When the step is done, call update_plan with {{"status": {{"{id}": "done"}}}}; the loop then
runs its check and starts the next step. Call finish when every step is done."""


def tool_allowed(role: str, tool: Tool) -> bool:
    """Whether `role` may call `tool`: the planner and the reviewer read (the reviewer also
    runs the tests and checks); the coder has every tool but planning and reviewing."""
    base = "coder" if role in ("coder", "escalate", "") else role
    if tool.name in _NOT_FOR.get(base, set()):
        return False
    if base == "coder":
        return True
    return tool.tier == "read" or (base == "reviewer" and tool.name in _REVIEWER_RUNS)


@dataclass(frozen=True)
class CheckResult:
    ok: bool
    detail: str
    seconds: float


class Conductor:
    """Decides each turn's role and what the loop does between turns, from the state."""

    def __init__(self, roles: RolesSettings, budgets: Budgets, ctx: ToolContext,
                 emit: Callable[..., None],
                 finish: Callable[..., None]) -> None:
        self.roles = roles
        self.budgets = budgets
        self.ctx = ctx
        self.emit = emit
        self.finish = finish
        self.review = ReviewDesk(roles, budgets, ctx, emit, finish)

    def phase(self, state: SessionState) -> Phase:
        """Whose turn it is: the reviewer's on an open review, else the planner's until a
        plan is adopted and while a failed step waits for a revision, else the coder's."""
        if state.roles.review_open:
            return "review"
        if state.plan is None:
            return "plan"
        if state.roles.replan_reason is not None:
            return "replan"
        return "work"

    def role(self, state: SessionState) -> str:
        return _ROLE_OF_PHASE[self.phase(state)]

    def specs(self, registry: ToolRegistry, state: SessionState) -> list[ToolSpec]:
        """The tools offered this turn: those of the role whose turn it is."""
        role = self.role(state)
        return ToolRegistry(t for t in (registry.get(n) for n in registry.names)
                            if t is not None and tool_allowed(role, t)).specs()

    # --- between turns -------------------------------------------------------------------

    def supervise(self, state: SessionState) -> bool:
        """The loop's own move before the next turn; True when it recorded something."""
        if state.pending_approvals:
            return False
        if self.review.supervise(state):
            return True
        phase = self.phase(state)
        if phase == "review":
            return False
        if phase in ("plan", "replan"):
            return self._planning(state, phase)
        return self._work(state)

    def _planning(self, state: SessionState, phase: Phase) -> bool:
        use = role_use(state, "planner", self.budgets, self.roles)
        if use.spent:
            self.finish("budget_exceeded", "", f"the planner's budget ({use.spent}) is spent "
                        f"after {use.turns} turns; the work so far is kept")
            return True
        if phase == "plan":
            if state.roles.planner_briefed:
                return False
            self.emit(SystemNote(kind=PLANNER_NOTE, text=PLANNER_BRIEF))
            return True
        roles = state.roles
        if roles.replans > self.roles.max_replans:
            self.finish("stuck", "", f"{roles.replan_reason}; the plan was revised "
                        f"{self.roles.max_replans} times already (roles.max_replans)")
            return True
        if roles.replan_noted:
            return False
        plan = state.plan
        assert plan is not None
        self.emit(SystemNote(kind=REPLAN_NOTE, untrusted=True, text=(
            f"A step failed, so the plan must be revised (revision {roles.replans} of at most "
            f"{self.roles.max_replans}): {roles.replan_reason}\n"
            f"{_fenced(roles.failed_check) if roles.failed_check else ''}\n\nThe plan "
            f"now:\n{render_plan(plan)}\n\nAs the planner, call propose_plan with the revised "
            "plan: keep the steps that are done (same id and text), change or split the one "
            "that failed.")))
        return True

    def _work(self, state: SessionState) -> bool:
        plan = state.plan
        assert plan is not None
        for step in plan.steps:
            if (step.status == "done" and step_key(plan, step.id) not in state.roles.checked
                    and DoneWhen.parse(step.done_when).runs):
                self._check(plan, step)
                return True
        working = current_step(plan)
        if working is not None:
            use = step_use(state, self.budgets, self.roles)
            if use is not None and use.spent:
                self._fail(working, f"its budget ({use.spent}: {use.turns} turns, "
                                 f"{use.tokens} tokens) is spent (roles.step_share)")
                return True
            return False
        ready = ready_steps(plan)
        if not ready:
            return False
        step = ready[0]
        self.emit(PlanUpdated(by="loop", changes=[PlanStepChange(id=step.id,
                                                                 status="in_progress")]),
                  SystemNote(kind="step", text=STEP_BRIEF.format(
                      id=step.id, title=step.title,
                      detail=f"{step.detail}\n" if step.detail else "",
                      files=", ".join(step.files) or "(not named)",
                      done_when=step.done_when or "you say so (update_plan)")))
        return True

    def _check(self, plan: Plan, step: PlanStep) -> CheckResult:
        """Run the step's `done_when` in the sandbox; a failed check fails the step."""
        check = DoneWhen.parse(step.done_when)
        result = self.run_check(check)
        self.emit(StepChecked(step_id=step.id, check=str(check), ok=result.ok,
                              detail=result.detail[:_DETAIL_CHARS], seconds=result.seconds))
        if not result.ok:
            self._fail(step, f"its check `{check}` did not pass")
        return result

    def run_check(self, check: DoneWhen) -> CheckResult:
        """Run a `tests:` or `command:` check in the sandbox, as the coder's tools would."""
        begin = time.perf_counter()
        if check.kind == "command":
            obs = RunTool().run(RunArgs(command=check.target), self.ctx)
            ok = obs.ok
        else:
            obs = RunTests().run(RunTestsArgs(target=check.target), self.ctx)
            runs = obs.data.get("runs", [])
            ok = obs.ok and bool(runs) and all(r.get("outcome") == "passed" for r in runs)
        detail = obs.output if obs.ok or not obs.error else f"{obs.error}\n{obs.output}"
        return CheckResult(ok, detail.strip(), round(time.perf_counter() - begin, 3))

    def _fail(self, step: PlanStep, why: str) -> None:
        self.emit(PlanUpdated(by="loop", changes=[PlanStepChange(
            id=step.id, status="failed", note=why)]))

    # --- finish ------------------------------------------------------------------------

    def on_finish(self, state: SessionState, summary: str) -> Observation | None:
        """What a passing `finish` does instead of ending the session, or None to end it:
        the step in progress is marked done and checked, other unfinished steps refuse it,
        and the reviewer gets the diff before the session may end."""
        plan = state.plan
        if plan is not None:
            step = current_step(plan)
            left = [s.id for s in unfinished(plan) if s is not step]
            if left:
                return Observation(ok=False, error=(
                    f"steps {', '.join(left)} of the plan are not done; work on them (the loop "
                    "starts each in turn) or, if they are not needed, mark them skipped with "
                    "update_plan"))
            if step is not None:
                self.emit(PlanUpdated(by="loop", changes=[PlanStepChange(id=step.id,
                                                                         status="done")]))
                check = DoneWhen.parse(step.done_when)
                if check.runs and not self._check(plan, step).ok:
                    return Observation(ok=False, error=(
                        f"step {step.id}'s check `{check}` failed, so the step failed and the "
                        "planner revises the plan"))
        return self.review.on_finish(state, summary)


def _fenced(text: str) -> str:
    """Text that may quote command output, fenced as data for the model."""
    seen = inspect(text)
    return wrap_untrusted(seen.text, seen.flags, seen.notes)
