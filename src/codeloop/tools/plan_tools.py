"""`propose_plan` and `update_plan`: the model states its plan, then reports progress on it.

Whether a proposal needs a person's approval is decided before the tool runs (the runner's
plan gate); by the time `propose_plan` runs, its plan has been accepted.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, model_validator

from codeloop.events import PlanStep, PlanStepChange, PlanStepIn, PlanUpdated, StepStatus
from codeloop.planner.model import Plan
from codeloop.planner.render import render_plan
from codeloop.planner.validation import change_problems, plan_problems
from codeloop.tools.base import Observation, Tool, ToolArgs, ToolContext

# The key under which the runner offers tools a view of the session's current plan.
CURRENT_PLAN = "current_plan"


class ProposePlanArgs(ToolArgs):
    summary: str
    steps: list[PlanStepIn]

    @model_validator(mode="after")
    def _a_dag(self) -> ProposePlanArgs:
        problems = plan_problems(self.steps)
        if problems:
            raise ValueError("; ".join(problems))
        return self


def steps(args: ProposePlanArgs) -> tuple[PlanStep, ...]:
    """The proposed steps, all pending."""
    return tuple(PlanStep(**s.model_dump()) for s in args.steps)


class ProposePlan(Tool):
    name = "propose_plan"
    description = (
        "Propose a plan: a summary and a few steps in working order, each with a short unique "
        "id, a title and depends_on (ids of earlier steps). If a person rejects it with a "
        "reason, propose a revised plan."
    )
    args_model = ProposePlanArgs
    tier = "read"

    def run(self, args: ProposePlanArgs, ctx: ToolContext) -> Observation:
        plan = Plan(call_id="", summary=args.summary, steps=steps(args))
        return Observation(ok=True, output=(
            f"{render_plan(plan)}\n\nThe plan is accepted. Work through it; call update_plan "
            "when a step starts, is done or is skipped."))


class UpdatePlanArgs(ToolArgs):
    # Two flat maps rather than a list of objects: a smaller schema in every request.
    status: dict[str, StepStatus] = Field(default_factory=dict)
    notes: dict[str, str] = Field(default_factory=dict)

    def changes(self) -> list[PlanStepChange]:
        ids = dict.fromkeys([*self.status, *self.notes])
        return [PlanStepChange(id=i, status=self.status.get(i), note=self.notes.get(i))
                for i in ids]


class UpdatePlan(Tool):
    name = "update_plan"
    description = (
        "Report progress on the plan: status maps step ids to pending, in_progress, done, "
        "failed or skipped; notes maps step ids to a short note (say why a step failed). To "
        "change the steps, propose a new plan."
    )
    args_model = UpdatePlanArgs
    tier = "read"

    def run(self, args: UpdatePlanArgs, ctx: ToolContext) -> Observation:
        view: Any = ctx.services.get(CURRENT_PLAN)
        plan = view() if callable(view) else None
        if plan is None:
            return Observation(ok=False, error="there is no accepted plan to update; call "
                                               "propose_plan first")
        changes = args.changes()
        problems = change_problems(plan, changes)
        if problems:
            return Observation(ok=False, error="; ".join(problems))
        ctx.emit(PlanUpdated(changes=changes))
        return Observation(ok=True, output=render_plan(plan.updated(changes)))
