"""The event vocabulary: every fact about a session is one of these, appended to its log.

Events are typed and versioned (`v`). Readers accept any version they know; an event
type a reader does not know is kept as `UnknownEvent` so old binaries can still list
and export newer logs.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

SCHEMA_VERSION = 1

# The text a tool result starts with when its call was cut off by a crash or a kill.
INTERRUPTED_MARKER = "[interrupted]"


def now() -> float:
    return time.time()


class EventBase(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)

    v: int = SCHEMA_VERSION
    ts: float = Field(default_factory=now)


class ToolCallData(BaseModel):
    """A tool call as the model asked for it (arguments may be unparsed text)."""

    model_config = ConfigDict(frozen=True)

    id: str
    name: str
    arguments: dict[str, Any] | None = None
    raw_arguments: str = ""


class UsageData(BaseModel):
    model_config = ConfigDict(frozen=True)

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    estimated: bool = False


class InstructionSource(BaseModel):
    """An instruction file put into the system prompt, and how it was treated: the user's
    own is trusted; a repository's is scanned and fenced as data, and `flags` taint."""

    model_config = ConfigDict(frozen=True)

    source: str
    trusted: bool
    flags: list[str] = Field(default_factory=list)
    redacted: int = 0


class HookFileData(BaseModel):
    """A file a configured hook command names, pinned by content when the session started."""

    model_config = ConfigDict(frozen=True)

    path: str
    sha256: str


# --- session life -------------------------------------------------------------------


class SessionStarted(EventBase):
    type: Literal["session_started"] = "session_started"
    task: str
    repo: str
    model: str
    config: dict[str, Any] = Field(default_factory=dict)
    system_prompt: str = ""
    tools: list[dict[str, Any]] = Field(default_factory=list)
    base_commit: str | None = None
    # The repository map for the task, made once at the start so that every model call, a
    # resumed session and a replay send the same bytes; "" when there is no code to map.
    repo_map: str = ""
    # The instruction files in `system_prompt`, in order (see `InstructionSource`).
    instructions: list[InstructionSource] = Field(default_factory=list)
    # Every hook file as it was at the start: a hook whose files differ later is refused.
    hook_files: list[HookFileData] = Field(default_factory=list)


class SessionResumed(EventBase):
    type: Literal["session_resumed"] = "session_resumed"
    pid: int = 0
    interrupted_calls: list[str] = Field(default_factory=list)


class SettingsOverridden(EventBase):
    """Settings a person changed for the rest of the session (flags given to `resume`), over
    those recorded at its start; public settings only, never the API key."""

    type: Literal["settings_overridden"] = "settings_overridden"
    changes: dict[str, Any] = Field(default_factory=dict)


class UserMessage(EventBase):
    """A human instruction added mid-session (feedback, steering, a rejection reason)."""

    type: Literal["user_message"] = "user_message"
    text: str
    source: str = "user"


class SystemNote(EventBase):
    """A message codeloop itself puts in front of the model (budget warning, loop nudge)."""

    type: Literal["system_note"] = "system_note"
    text: str
    kind: str = "note"


class SessionFinished(EventBase):
    type: Literal["session_finished"] = "session_finished"
    status: Literal[
        "finished", "budget_exceeded", "stuck", "stopped", "error", "context_overflow",
        "needs_human", "cancelled",
    ]
    summary: str = ""
    reason: str = ""


class SessionPaused(EventBase):
    type: Literal["session_paused"] = "session_paused"
    reason: str = ""


# --- the model --------------------------------------------------------------------------


class ModelCallStarted(EventBase):
    type: Literal["model_call_started"] = "model_call_started"
    step: int
    model: str
    # The role and purpose the router chose the model for ("" in logs from before routing).
    role: str = ""
    purpose: str = ""
    message_count: int
    input_tokens_estimate: int = 0


class ModelCallFinished(EventBase):
    type: Literal["model_call_finished"] = "model_call_finished"
    step: int
    model: str
    role: str = ""
    purpose: str = ""
    text: str = ""
    tool_calls: list[ToolCallData] = Field(default_factory=list)
    usage: UsageData = Field(default_factory=UsageData)
    cost_usd: float = 0.0
    latency_ms: float = 0.0
    ttft_ms: float | None = None
    stop_reason: str = ""
    retries: int = 0
    # What the provider layer decided on the way (tool protocol, stream fallbacks).
    notes: list[str] = Field(default_factory=list)


class ModelCallFailed(EventBase):
    type: Literal["model_call_failed"] = "model_call_failed"
    step: int
    model: str
    error_kind: str
    message: str
    retryable: bool = False
    role: str = ""
    purpose: str = ""


class ModelRouted(EventBase):
    """The router's choice for a purpose changed (recorded when it does, not per call)."""

    type: Literal["model_routed"] = "model_routed"
    purpose: str
    role: str
    model: str
    reason: str = ""


class ModelFellBack(EventBase):
    """A call moved to the next model of its role's chain; `cause` is the error's kind."""

    type: Literal["model_fell_back"] = "model_fell_back"
    purpose: str
    role: str
    from_model: str
    to_model: str
    cause: str
    error: str = ""


class AuxiliaryModelCall(EventBase):
    """A model call beside the loop's turns (a compaction summary, say): its cost counts,
    but it is not a step and not part of the conversation."""

    type: Literal["auxiliary_model_call"] = "auxiliary_model_call"
    purpose: str
    role: str
    model: str
    ok: bool = True
    usage: UsageData = Field(default_factory=UsageData)
    cost_usd: float = 0.0
    latency_ms: float = 0.0
    error_kind: str = ""
    message: str = ""


# --- tools --------------------------------------------------------------------------------


class ToolCallStarted(EventBase):
    type: Literal["tool_call_started"] = "tool_call_started"
    step: int
    call: ToolCallData


class ToolCallFinished(EventBase):
    type: Literal["tool_call_finished"] = "tool_call_finished"
    step: int
    call_id: str
    name: str
    ok: bool
    output: str
    error: str | None = None
    truncated: bool = False
    untrusted: bool = False
    interrupted: bool = False
    ends_session: bool = False
    duration_ms: float = 0.0
    data: dict[str, Any] = Field(default_factory=dict)


class PolicyDecided(EventBase):
    type: Literal["policy_decided"] = "policy_decided"
    call_id: str
    decision: Literal["allow", "ask", "deny"]
    rule: str = ""
    reason: str = ""
    source: str = "rules"


class ApprovalRequested(EventBase):
    type: Literal["approval_requested"] = "approval_requested"
    call_id: str
    name: str
    summary: str
    digest: str


class ApprovalGiven(EventBase):
    type: Literal["approval_given"] = "approval_given"
    call_id: str
    approved: bool
    digest: str
    reason: str = ""
    remember_rule: str | None = None
    by: str = "user"


class PlanStepIn(BaseModel):
    """A proposed step."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    title: str
    detail: str = ""
    depends_on: list[str] = Field(default_factory=list)


StepStatus = Literal["pending", "in_progress", "done", "skipped"]


class PlanStep(PlanStepIn):
    """A step with its progress."""

    status: StepStatus = "pending"
    note: str = ""


class PlanProposed(EventBase):
    """The model proposed a plan (the call of `propose_plan`); a person may have to approve it.

    The answer is the `ApprovalGiven` for `call_id`, so a plan waits exactly as a tool call does.
    """

    type: Literal["plan_proposed"] = "plan_proposed"
    call_id: str
    summary: str
    steps: list[PlanStep]
    needs_approval: bool = False


class PlanStepChange(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    status: StepStatus | None = None
    note: str | None = None


class PlanUpdated(EventBase):
    """Progress on the current plan: step statuses and notes (the set of steps is unchanged)."""

    type: Literal["plan_updated"] = "plan_updated"
    changes: list[PlanStepChange]


class FileEdited(EventBase):
    type: Literal["file_edited"] = "file_edited"
    path: str
    before_sha: str | None
    after_sha: str | None
    diff: str
    tool: str = ""
    strategy: str = "exact"


class CommandRan(EventBase):
    type: Literal["command_ran"] = "command_ran"
    command: str
    exit_code: int | None
    duration_ms: float
    timed_out: bool = False
    killed_reason: str | None = None
    sandbox: str = "subprocess"


# --- supervision --------------------------------------------------------------------------


class BudgetWarning(EventBase):
    type: Literal["budget_warning"] = "budget_warning"
    budget: str
    used: float
    limit: float


class LoopDetected(EventBase):
    type: Literal["loop_detected"] = "loop_detected"
    pattern: str
    detail: str = ""
    action: Literal["nudge", "stop"] = "nudge"


class Compacted(EventBase):
    type: Literal["compacted"] = "compacted"
    dropped_events: int
    summary: str
    tokens_before: int
    tokens_after: int


class VerificationRan(EventBase):
    type: Literal["verification_ran"] = "verification_ran"
    phase: Literal["baseline", "after", "final"] = "after"
    commands: list[str] = Field(default_factory=list)
    passed: int = 0
    failed: int = 0
    new_failures: list[str] = Field(default_factory=list)
    fixed_failures: list[str] = Field(default_factory=list)
    still_failing: list[str] = Field(default_factory=list)
    summary: str = ""
    # Wall time of the commands that ran (reused results count nothing).
    seconds: float = 0.0
    # Why test runs ran no test at all (the runner missing, nothing collected): not verified.
    could_not_run: list[str] = Field(default_factory=list)
    # The interpreter the tests run with (said with the baseline).
    python: str = ""


class BaselineRecorded(EventBase):
    """Verification runs on the untouched tree (`RunResult` dumps), kept so that a resumed
    session still compares with the state before the edits."""

    type: Literal["baseline_recorded"] = "baseline_recorded"
    runs: list[dict[str, Any]] = Field(default_factory=list)


class ReviewDecided(EventBase):
    type: Literal["review_decided"] = "review_decided"
    action: Literal["apply", "commit", "discard", "reject"]
    feedback: str = ""
    files: list[str] = Field(default_factory=list)


class UnknownEvent(EventBase):
    """An event written by a newer codeloop; kept verbatim so nothing is lost."""

    type: str


KnownEvent = Annotated[
    SessionStarted
    | SessionResumed
    | SettingsOverridden
    | UserMessage
    | SystemNote
    | SessionFinished
    | SessionPaused
    | ModelCallStarted
    | ModelCallFinished
    | ModelCallFailed
    | ModelRouted
    | ModelFellBack
    | AuxiliaryModelCall
    | ToolCallStarted
    | ToolCallFinished
    | PolicyDecided
    | ApprovalRequested
    | ApprovalGiven
    | PlanProposed
    | PlanUpdated
    | FileEdited
    | CommandRan
    | BudgetWarning
    | LoopDetected
    | Compacted
    | VerificationRan
    | BaselineRecorded
    | ReviewDecided,
    Field(discriminator="type"),
]

Event = KnownEvent | UnknownEvent

_adapter: TypeAdapter[Any] = TypeAdapter(KnownEvent)


def parse_event(data: dict[str, Any]) -> Event:
    """Turn a stored JSON object back into its typed event."""
    try:
        event: Event = _adapter.validate_python(data)
    except ValidationError:
        if data.get("type") in _KNOWN_TYPES:
            raise
        return UnknownEvent.model_validate(data)
    return event


def parse_event_json(data: str | bytes) -> Event:
    """Parse a stored event straight from JSON (pydantic-core parses faster than json.loads)."""
    try:
        event: Event = _adapter.validate_json(data)
    except ValidationError:
        return parse_event(json.loads(data))
    return event


def event_type(event: Event) -> str:
    return str(event.type)


_KNOWN_TYPES = {
    cls.model_fields["type"].default
    for cls in (
        SessionStarted, SessionResumed, SettingsOverridden, UserMessage, SystemNote,
        SessionFinished, SessionPaused, ModelCallStarted, ModelCallFinished, ModelCallFailed,
        ModelRouted, ModelFellBack, AuxiliaryModelCall, ToolCallStarted, ToolCallFinished,
        PolicyDecided, ApprovalRequested, ApprovalGiven, PlanProposed, PlanUpdated, FileEdited,
        CommandRan, BudgetWarning, LoopDetected, Compacted, VerificationRan, BaselineRecorded,
        ReviewDecided,
    )
}


@dataclass(frozen=True)
class StoredEvent:
    """An event with its place in the log."""

    session_id: str
    seq: int
    event: Event
