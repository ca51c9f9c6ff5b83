"""The roles part of the session's fold: replans, reviews, step checks, per-step use, explorers.

Everything the conductor (`session.roles`) decides from is here, folded from the log, so a
resumed session continues the same step in the same phase.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from codeloop.events import (
    Event,
    ExplorerFinished,
    ExplorerStarted,
    ModelCallFinished,
    PlanUpdated,
    ReviewDecided,
    ReviewGiven,
    ReviewRequested,
    StepChecked,
    SystemNote,
)
from codeloop.planner.dag import current_step
from codeloop.planner.model import Plan

# Roles whose turns count against the step being worked.
STEP_ROLES = frozenset({"coder", "escalate"})
# The notes the conductor gives (`SystemNote.kind`): each is given once per occasion.
PLANNER_NOTE = "planner"
REPLAN_NOTE = "replan"
REVIEW_NOTE = "review_brief"
SENT_BACK_NOTE = "review"


@dataclass
class StepUse:
    """The coder's turns, tokens and cost while one step was in progress."""

    turns: int = 0
    tokens: int = 0
    cost_usd: float = 0.0


@dataclass
class ExplorerRecord:
    subagent: str
    question: str
    started: float
    finished: ExplorerFinished | None = None


@dataclass
class RolesState:
    planner_briefed: bool = False
    # Step failures that asked for a revision, and the reason of the one still open.
    replans: int = 0
    replan_reason: str | None = None
    replan_noted: bool = False
    # What the last failed `done_when` check printed (repository text: fenced when shown).
    failed_check: str = ""
    # Step key (`step_key`) -> whether its last check passed.
    checked: dict[str, bool] = field(default_factory=dict)
    step_use: dict[str, StepUse] = field(default_factory=dict)
    review_open: bool = False
    review_round: int = 0
    review_briefed: bool = False
    sent_back: int = 0
    # A send-back whose reasons the coder has not been told yet.
    sent_back_due: str | None = None
    # The coder's summary handed to the reviewer, and the reviewer's approval.
    handed_summary: str = ""
    approved: ReviewGiven | None = None
    explorers: dict[str, ExplorerRecord] = field(default_factory=dict)


def step_key(plan: Plan, step_id: str) -> str:
    """A step within one revision of the plan (a revision may reuse an id for new work)."""
    return f"{plan.revision}:{step_id}"


def adopted(roles: RolesState, plan: Plan) -> None:
    """A plan was adopted: a revision closes the replan it answered."""
    if plan.revision:
        roles.replan_reason = None


def apply_roles(roles: RolesState, event: Event, plan: Plan | None) -> None:
    """Fold one event into `roles`; `plan` is the plan being worked before the event."""
    if isinstance(event, SystemNote):
        roles.planner_briefed |= event.kind == PLANNER_NOTE
        roles.replan_noted |= event.kind == REPLAN_NOTE
        roles.review_briefed |= event.kind == REVIEW_NOTE
        if event.kind == SENT_BACK_NOTE:
            roles.sent_back_due = None
    elif isinstance(event, ModelCallFinished) and event.role in STEP_ROLES and plan is not None:
        step = current_step(plan)
        if step is not None:
            use = roles.step_use.setdefault(step_key(plan, step.id), StepUse())
            use.turns += 1
            use.tokens += event.usage.input_tokens + event.usage.output_tokens
            use.cost_usd += event.cost_usd
    elif isinstance(event, PlanUpdated) and plan is not None:
        for change in event.changes:
            if change.status == "failed":
                roles.replans += 1
                roles.replan_noted = False
                roles.replan_reason = f"step {change.id} failed: {change.note or 'no reason given'}"
            elif change.status == "in_progress":
                roles.checked.pop(step_key(plan, change.id), None)
                roles.failed_check = ""
    elif isinstance(event, StepChecked) and plan is not None:
        roles.checked[step_key(plan, event.step_id)] = event.ok
        roles.failed_check = "" if event.ok else event.detail
    elif isinstance(event, ReviewDecided):
        # A person's verdict on the result: a rejection reopens the work, and its next
        # finish is reviewed again.
        roles.approved = None
    elif isinstance(event, ReviewRequested):
        roles.approved = None
        roles.review_open = True
        roles.review_briefed = False
        roles.review_round = event.round
        roles.handed_summary = event.summary
    elif isinstance(event, ReviewGiven):
        roles.review_open = False
        if event.verdict == "approve":
            roles.approved = event
        else:
            roles.sent_back += 1
            roles.sent_back_due = event.reasons or "no reasons given"
    elif isinstance(event, ExplorerStarted):
        roles.explorers[event.subagent] = ExplorerRecord(event.subagent, event.question, event.ts)
    elif isinstance(event, ExplorerFinished) and event.subagent in roles.explorers:
        roles.explorers[event.subagent].finished = event
