"""A plan as the session holds it: its steps, whether a person approved it, its progress."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Literal

from codeloop.events import PlanProposed, PlanRevised, PlanStep, PlanStepChange

Approval = Literal["pending", "approved", "rejected"]
FINISHED = frozenset({"done", "skipped"})


@dataclass(frozen=True)
class Plan:
    call_id: str
    summary: str
    steps: tuple[PlanStep, ...]
    approval: Approval = "approved"
    # 0 for the first plan, then one more with each revision after a failed step.
    revision: int = 0

    @classmethod
    def from_proposal(cls, event: PlanProposed | PlanRevised) -> Plan:
        return cls(call_id=event.call_id, summary=event.summary, steps=tuple(event.steps),
                   approval="pending" if event.needs_approval else "approved",
                   revision=event.revision if isinstance(event, PlanRevised) else 0)

    def step(self, step_id: str) -> PlanStep | None:
        return next((s for s in self.steps if s.id == step_id), None)

    @property
    def done(self) -> int:
        return sum(s.status in FINISHED for s in self.steps)

    def decided(self, approved: bool) -> Plan:
        return replace(self, approval="approved" if approved else "rejected")

    def updated(self, changes: Iterable[PlanStepChange]) -> Plan:
        """The plan with the changes' statuses and notes applied (unknown ids are ignored)."""
        by_id = {c.id: c for c in changes}
        steps = []
        for step in self.steps:
            change = by_id.get(step.id)
            if change is not None:
                step = step.model_copy(update={
                    k: v for k, v in (("status", change.status), ("note", change.note))
                    if v is not None})
            steps.append(step)
        return replace(self, steps=tuple(steps))
