"""Checks on a proposed plan and on progress updates; each problem is a sentence the model
can act on."""

from __future__ import annotations

from collections.abc import Sequence
from graphlib import CycleError, TopologicalSorter

from codeloop.events import PlanStepChange, PlanStepIn
from codeloop.planner.dag import done_when_problem
from codeloop.planner.model import Plan

MAX_STEPS = 30


def plan_problems(steps: Sequence[PlanStepIn]) -> list[str]:
    """Why these steps are not a usable plan (empty list: they are)."""
    if not steps:
        return ["a plan needs at least one step"]
    problems = []
    if len(steps) > MAX_STEPS:
        problems.append(f"{len(steps)} steps is too many; keep a plan to {MAX_STEPS} steps or "
                        "fewer by merging small ones")
    seen: set[str] = set()
    for n, step in enumerate(steps, 1):
        if not step.id.strip():
            problems.append(f"step {n} has an empty id")
        elif step.id in seen:
            problems.append(f"step id {step.id!r} is used twice; ids must be unique")
        seen.add(step.id)
        if not step.title.strip():
            problems.append(f"step {step.id!r} has an empty title")
        check = done_when_problem(step.done_when)
        if check:
            problems.append(f"step {step.id!r}: {check}")
        if any(not f.strip() for f in step.files):
            problems.append(f"step {step.id!r} names an empty file path")
    for step in steps:
        for dep in step.depends_on:
            if dep == step.id:
                problems.append(f"step {step.id!r} depends on itself")
            elif dep not in seen:
                problems.append(f"step {step.id!r} depends on unknown step {dep!r} "
                                f"(known ids: {', '.join(sorted(seen))})")
    cycle = find_cycle(steps)
    if cycle:
        problems.append("the dependencies form a cycle (each step depends on the next): "
                        + " -> ".join(cycle) + "; remove one of these dependencies")
    return problems


def find_cycle(steps: Sequence[PlanStepIn]) -> list[str] | None:
    """A dependency cycle as a closed path of ids, or None when the steps form a DAG."""
    # Self-dependencies are reported on their own; unknown ids are harmless extra nodes here.
    sorter = TopologicalSorter({s.id: [d for d in s.depends_on if d != s.id] for s in steps})
    try:
        sorter.prepare()
    except CycleError as exc:
        # graphlib reports the cycle as a list whose first and last ids are the same.
        return [str(node) for node in reversed(exc.args[1])]
    return None


def change_problems(plan: Plan, changes: Sequence[PlanStepChange]) -> list[str]:
    """Why these progress updates cannot be applied to the plan."""
    if not changes:
        return ["no changes given; pass at least one {id, status or note}"]
    problems = []
    for change in changes:
        if plan.step(change.id) is None:
            problems.append(f"no step {change.id!r} in the current plan (ids: "
                            f"{', '.join(s.id for s in plan.steps)}); to change the set of "
                            "steps, call propose_plan with the new plan")
        elif change.status is None and change.note is None:
            problems.append(f"the change for step {change.id!r} sets neither status nor note")
    return problems
