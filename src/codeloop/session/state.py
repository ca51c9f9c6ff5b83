"""`SessionState = fold(events)`: everything the loop knows, derived from the log alone."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from codeloop.config import merge_layers
from codeloop.events import (
    ApprovalGiven,
    ApprovalRequested,
    AuxiliaryModelCall,
    BaselineRecorded,
    Compacted,
    ContextBuilt,
    Event,
    FileEdited,
    ModelCallFinished,
    ModelCallStarted,
    PlanProposed,
    PlanRevised,
    PlanUpdated,
    SessionFinished,
    SessionPaused,
    SessionStarted,
    SettingsOverridden,
    StoredEvent,
    SystemNote,
    ToolCallData,
    ToolCallFinished,
    ToolCallStarted,
    UsageData,
)
from codeloop.planner.model import Plan
from codeloop.session.roles_state import RolesState, adopted, apply_roles
from codeloop.session.routing_state import RoutingState, apply_routing, usage_rows


def action_signature(call: ToolCallData) -> str:
    args = call.arguments if call.arguments is not None else call.raw_arguments
    return f"{call.name}:{json.dumps(args, sort_keys=True, default=str)}"


@dataclass(frozen=True)
class ActionRecord:
    """One finished tool call, as loop detection sees it."""

    signature: str
    observation: str
    ok: bool
    malformed: bool


@dataclass
class SessionState:
    session_id: str = ""
    started: SessionStarted | None = None
    status: str = "created"
    finished: SessionFinished | None = None
    last_seq: int = 0
    steps: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cost_usd: float = 0.0
    usage_estimated: bool = False
    active_s: float = 0.0
    # The events that make up the conversation, in order (the context builder reads these).
    transcript: list[Event] = field(default_factory=list)
    # Tool calls the model asked for in its last turn, and which of them started / finished.
    requested: list[ToolCallData] = field(default_factory=list)
    # The role whose turn asked for them: its tool set decides what may run.
    requested_role: str = ""
    started_calls: dict[str, ToolCallStarted] = field(default_factory=dict)
    finished_calls: set[str] = field(default_factory=set)
    model_call_open: bool = False
    actions: list[ActionRecord] = field(default_factory=list)
    no_action_turns: int = 0
    warned_budgets: set[str] = field(default_factory=set)
    loop_nudges: int = 0
    actions_at_last_nudge: int = 0
    edits: list[FileEdited] = field(default_factory=list)
    pending_approvals: dict[str, ApprovalRequested] = field(default_factory=dict)
    approvals: dict[str, ApprovalGiven] = field(default_factory=dict)
    # Calls a runner stopped at to wait for a person: not interrupted, though started, until
    # a resume after their answer (a crash while such a call runs is then an interruption).
    awaiting_approval: set[str] = field(default_factory=set)
    tainted: bool = False
    # The plan being worked (approved, or adopted where no approval is needed) and every
    # proposal by its call id; a proposal waiting for a person is also a pending approval.
    plan: Plan | None = None
    proposals: dict[str, Plan] = field(default_factory=dict)
    compactions: int = 0
    # The code contexts put into the conversation (`session.context_feed`), in order.
    contexts: list[ContextBuilt] = field(default_factory=list)
    # A successful finish whose SessionFinished was not yet written (killed in between).
    finish_summary: str | None = None
    # The verifier's runs on the untouched tree (`BaselineRecorded`), restored on resume.
    baseline_runs: list[dict[str, Any]] = field(default_factory=list)
    # Settings changed since the start (`SettingsOverridden`, merged in order): together with
    # `started.config` they are the settings the session runs with (`session.resume`).
    overrides: dict[str, Any] = field(default_factory=dict)
    pause_reason: str = ""
    # What the router remembers (routes, fallbacks held, failed fix rounds) and the usage
    # per model and role (`session.routing_state`).
    routing: RoutingState = field(default_factory=RoutingState)
    # What the roles working one plan have done: replans, reviews, step checks and use,
    # explorers (`session.roles_state`).
    roles: RolesState = field(default_factory=RolesState)

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    @property
    def is_over(self) -> bool:
        return self.finished is not None

    def unfinished_calls(self) -> list[ToolCallData]:
        """Calls of the last model turn that have no result yet (started or not)."""
        return [c for c in self.requested if c.id not in self.finished_calls]

    @property
    def pending_plan(self) -> Plan | None:
        """The proposed plan waiting for a person's answer, if any."""
        return next((self.proposals[c] for c in self.pending_approvals if c in self.proposals),
                    None)

    def interrupted_calls(self) -> list[ToolCallData]:
        """Calls that started but never finished: the process died while they ran."""
        return [c for c in self.unfinished_calls()
                if c.id in self.started_calls and c.id not in self.awaiting_approval]


def _observation_digest(event: ToolCallFinished) -> str:
    return hashlib.sha256(f"{event.ok}|{event.error}|{event.output}".encode()).hexdigest()[:16]


def apply(state: SessionState, stored: StoredEvent | Event, seq: int | None = None) -> SessionState:
    """Fold one event into the state (the accumulator is owned by the fold, so it is updated in place)."""
    event = stored.event if isinstance(stored, StoredEvent) else stored
    if isinstance(stored, StoredEvent):
        state.last_seq = stored.seq
        state.session_id = stored.session_id
    elif seq is not None:
        state.last_seq = seq
    kind = event.type
    apply_routing(state.routing, event, len(state.edits))
    apply_roles(state.roles, event, state.plan)
    if isinstance(event, SessionStarted):
        state.started = event
        state.status = "running"
        # Flagged repository instructions taint as the same text read by a tool would.
        state.tainted |= any(s.flags and not s.trusted for s in event.instructions)
    elif kind == "session_resumed":
        state.status = "running"
        state.awaiting_approval -= state.approvals.keys()
    elif isinstance(event, SettingsOverridden):
        state.overrides = merge_layers(state.overrides, event.changes)
    elif isinstance(event, SessionPaused):
        state.status = "paused"
        state.pause_reason = event.reason
    elif isinstance(event, SessionFinished):
        state.finished = event
        state.status = event.status
    elif isinstance(event, ModelCallStarted):
        state.model_call_open = True
    elif isinstance(event, ModelCallFinished):
        state.model_call_open = False
        state.steps += 1
        _count_usage(state, event.usage, event.cost_usd, event.latency_ms)
        state.requested = list(event.tool_calls)
        state.requested_role = event.role
        state.started_calls = {}
        state.finished_calls = set()
        state.no_action_turns = 0 if event.tool_calls else state.no_action_turns + 1
        state.transcript.append(event)
    elif kind == "model_call_failed":
        state.model_call_open = False
    elif isinstance(event, AuxiliaryModelCall):
        _count_usage(state, event.usage, event.cost_usd, event.latency_ms)
    elif isinstance(event, ToolCallStarted):
        state.started_calls[event.call.id] = event
    elif isinstance(event, ToolCallFinished):
        state.finished_calls.add(event.call_id)
        state.active_s += event.duration_ms / 1000
        state.tainted |= event.untrusted
        call = next((c for c in state.requested if c.id == event.call_id), None)
        if call is not None and not event.interrupted:
            state.actions.append(ActionRecord(
                signature=action_signature(call), observation=_observation_digest(event),
                ok=event.ok, malformed=bool(event.data.get("malformed")),
            ))
        state.pending_approvals.pop(event.call_id, None)
        state.awaiting_approval.discard(event.call_id)
        state.transcript.append(event)
        if event.ends_session and event.ok:
            state.finish_summary = str(event.data.get("summary", ""))
    elif kind in ("user_message", "system_note"):
        state.transcript.append(event)
        if getattr(event, "reopens", False) and state.finished is not None:
            state.finished = None
            state.finish_summary = None
            state.status = "running"
        state.tainted |= isinstance(event, SystemNote) and event.untrusted
    elif kind == "review_decided" and getattr(event, "action", "") == "reject":
        # A rejected result goes back to the agent: the session is open again and the
        # feedback (a user_message appended just before) is its next instruction.
        state.finished = None
        state.finish_summary = None
        state.status = "running"
    elif isinstance(event, FileEdited):
        state.edits.append(event)
    elif isinstance(event, ApprovalRequested):
        state.pending_approvals[event.call_id] = event
        state.awaiting_approval.add(event.call_id)
        state.status = "waiting_approval"
    elif isinstance(event, ApprovalGiven):
        state.approvals[event.call_id] = event
        state.pending_approvals.pop(event.call_id, None)
        proposal = state.proposals.get(event.call_id)
        if proposal is not None:
            state.proposals[event.call_id] = proposal.decided(event.approved)
            if event.approved:
                state.plan = state.proposals[event.call_id]
                adopted(state.roles, state.plan)
        if state.finished is None and not state.pending_approvals:
            state.status = "running"
    elif isinstance(event, PlanProposed | PlanRevised):
        proposal = Plan.from_proposal(event)
        state.proposals[event.call_id] = proposal
        if not event.needs_approval:
            state.plan = proposal
            adopted(state.roles, proposal)
    elif isinstance(event, PlanUpdated):
        if state.plan is not None:
            state.plan = state.plan.updated(event.changes)
    elif kind == "budget_warning":
        state.warned_budgets.add(str(getattr(event, "budget", "")))
    elif kind == "loop_detected":
        if getattr(event, "action", "") == "nudge":
            state.loop_nudges += 1
            state.actions_at_last_nudge = len(state.actions)
            state.no_action_turns = 0
    elif isinstance(event, BaselineRecorded):
        state.baseline_runs.extend(event.runs)
    elif isinstance(event, Compacted):
        state.compactions += 1
        state.transcript.append(event)
    elif isinstance(event, ContextBuilt):
        state.contexts.append(event)
        state.tainted |= event.untrusted
        state.transcript.append(event)
    return state


def _count_usage(state: SessionState, usage: UsageData, cost_usd: float, latency_ms: float
                 ) -> None:
    state.input_tokens += usage.input_tokens
    state.output_tokens += usage.output_tokens
    state.cache_read_tokens += usage.cache_read_tokens
    state.usage_estimated |= usage.estimated
    state.cost_usd += cost_usd
    state.active_s += latency_ms / 1000


def fold(events: Iterable[StoredEvent | Event]) -> SessionState:
    state = SessionState()
    for event in events:
        apply(state, event)
    return state


def summary_dict(state: SessionState) -> dict[str, Any]:
    """The figures a person or a report wants about a session."""
    return {
        "session_id": state.session_id,
        "status": state.status,
        "task": state.started.task if state.started else "",
        "steps": state.steps,
        "input_tokens": state.input_tokens,
        "output_tokens": state.output_tokens,
        "cache_read_tokens": state.cache_read_tokens,
        "cost_usd": round(state.cost_usd, 6),
        "usage_estimated": state.usage_estimated,
        "tool_calls": len(state.actions),
        "edits": len(state.edits),
        "by_model": usage_rows(state.routing),
        "summary": state.finished.summary if state.finished else "",
    }
