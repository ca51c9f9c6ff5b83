"""Which plan step each changed file belongs to, from the log: an edit belongs to the step
being worked when it was made (the last one set in progress, else the first not finished).
A file edited in several steps goes with the last; files no edit explains (written by a
command) go last, as other changes."""

from __future__ import annotations

from dataclasses import dataclass

from codeloop.events import Event, FileEdited, PlanProposed, PlanUpdated
from codeloop.planner.model import FINISHED, Plan


@dataclass(frozen=True)
class StepGroup:
    title: str
    detail: str
    files: list[str]


def _current(plan: Plan, in_progress: str | None) -> str | None:
    step = plan.step(in_progress) if in_progress else None
    if step is not None and step.status == "in_progress":
        return step.id
    return next((s.id for s in plan.steps if s.status not in FINISHED), None)


def group_by_step(events: list[Event], files: list[str]) -> list[StepGroup]:
    """The changed `files` grouped by plan step, in the plan's order; [] without a plan."""
    plan: Plan | None = None
    in_progress: str | None = None
    owner: dict[str, str] = {}
    for event in events:
        if isinstance(event, PlanProposed):
            plan, in_progress = Plan.from_proposal(event), None
        elif isinstance(event, PlanUpdated) and plan is not None:
            plan = plan.updated(event.changes)
            started = [c.id for c in event.changes if c.status == "in_progress"]
            in_progress = started[-1] if started else in_progress
        elif isinstance(event, FileEdited) and plan is not None:
            step = _current(plan, in_progress)
            if step is not None:
                owner[event.path] = step
    if plan is None:
        return []
    groups = [StepGroup(s.title, s.detail, [f for f in files if owner.get(f) == s.id])
              for s in plan.steps]
    claimed = {f for g in groups for f in g.files}
    rest = [f for f in files if f not in claimed]
    if rest:
        groups.append(StepGroup("Other changes", "Files written by commands the session ran.",
                                rest))
    return [g for g in groups if g.files]
