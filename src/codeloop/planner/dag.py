"""The plan as the loop executes it: ready steps in dependency order, what "done" means for a
step, and how a revision differs from the plan it replaces."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from graphlib import TopologicalSorter
from typing import Literal

from codeloop.events import PlanStep, PlanStepIn
from codeloop.planner.model import FINISHED, Plan

CheckKind = Literal["none", "tests", "command", "review"]
_KINDS: tuple[CheckKind, ...] = ("tests", "command", "review")
DONE_WHEN_HELP = ('done_when is "" (done when the coder says so), "tests: TARGET" (those tests '
                  'pass in the sandbox), "command: CMD" (the command exits 0 in the sandbox) '
                  'or "review: CRITERION" (the reviewer judges it with the whole diff)')


@dataclass(frozen=True)
class DoneWhen:
    """A step's completion check. `tests` and `command` run when the step is marked done
    and fail it when they do not pass; `review` and `none` are judged by the reviewer."""

    kind: CheckKind
    target: str = ""

    @classmethod
    def parse(cls, text: str) -> DoneWhen:
        """The check `text` names; a `ValueError` saying the accepted forms otherwise."""
        text = text.strip()
        if not text:
            return cls("none")
        head, sep, rest = text.partition(":")
        kind = head.strip().lower()
        if not sep or kind not in _KINDS or not rest.strip():
            raise ValueError(f"done_when {text!r} is not understood; {DONE_WHEN_HELP}")
        return cls(kind, rest.strip())

    @property
    def runs(self) -> bool:
        """Whether the loop runs this check itself when the step is marked done."""
        return self.kind in ("tests", "command")

    def __str__(self) -> str:
        return "" if self.kind == "none" else f"{self.kind}: {self.target}"


def done_when_problem(text: str) -> str | None:
    try:
        DoneWhen.parse(text)
    except ValueError as exc:
        return str(exc)
    return None


def _order(plan: Plan) -> dict[str, int]:
    """Each step's place in a dependency order that keeps the plan's own order for ties."""
    sorter = TopologicalSorter({s.id: list(s.depends_on) for s in plan.steps})
    sorter.prepare()
    index = {s.id: n for n, s in enumerate(plan.steps)}
    order: list[str] = []
    while sorter.is_active():
        ready = sorted(sorter.get_ready(), key=lambda i: index.get(i, len(index)))
        order.extend(ready)
        sorter.done(*ready)
    return {step_id: n for n, step_id in enumerate(order)}


def ready_steps(plan: Plan) -> list[PlanStep]:
    """Pending steps whose dependencies are all done or skipped, in dependency order."""
    settled = {s.id for s in plan.steps if s.status in FINISHED}
    ready = [s for s in plan.steps
             if s.status == "pending" and all(d in settled for d in s.depends_on)]
    rank = _order(plan)
    return sorted(ready, key=lambda s: rank[s.id])


def current_step(plan: Plan) -> PlanStep | None:
    """The step being worked (the loop starts one at a time)."""
    return next((s for s in plan.steps if s.status == "in_progress"), None)


def unfinished(plan: Plan) -> list[PlanStep]:
    return [s for s in plan.steps if s.status not in FINISHED]


def plan_diff(old: Plan, new: Sequence[PlanStepIn]) -> list[str]:
    """One line per step: `+` added, `-` removed, `~` changed (and what), `=` unchanged."""
    before = {s.id: s for s in old.steps}
    after = {s.id for s in new}
    lines = []
    for step in new:
        was = before.get(step.id)
        if was is None:
            lines.append(f"+ {step.id}: {step.title}")
            continue
        changed = [f for f in ("title", "detail", "depends_on", "files", "done_when")
                   if getattr(was, f) != getattr(step, f)]
        mark = "~" if changed else "="
        what = f" (changed: {', '.join(changed)})" if changed else f" (was {was.status})"
        lines.append(f"{mark} {step.id}: {step.title}{what}")
    lines += [f"- {s.id}: {s.title} (was {s.status})" for s in old.steps if s.id not in after]
    return lines


def carried_over(old: Plan, new: Sequence[PlanStepIn]) -> tuple[PlanStep, ...]:
    """The revised steps: a step done (or skipped) in the old plan and unchanged keeps its
    status, so the work done is not done again; every other step starts pending."""
    before = {s.id: s for s in old.steps}
    steps = []
    for step in new:
        was = before.get(step.id)
        keep = (was is not None and was.status in FINISHED
                and PlanStepIn(**was.model_dump(include=set(PlanStepIn.model_fields))) == step)
        steps.append(PlanStep(**step.model_dump(), status=was.status if keep and was else
                              "pending"))
    return tuple(steps)
