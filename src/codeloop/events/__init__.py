"""The event vocabulary: every fact about a session is one of these, appended to its log.

Events are typed and versioned (`v`). Readers accept any version they know; an event
type a reader does not know is kept as `UnknownEvent` so old binaries can still list
and export newer logs. The events live in one module per part of a session; this package
imports nothing else of ours.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Annotated, Any, get_args

from pydantic import Field, TypeAdapter, ValidationError

from codeloop.events.admin import AdminActionRecorded, SpendAlertRaised
from codeloop.events.base import (
    INTERRUPTED_MARKER,
    SCHEMA_VERSION,
    EventBase,
    HookFileData,
    InstructionSource,
    ToolCallData,
    UsageData,
    now,
)
from codeloop.events.changes import (
    CommandRan,
    FileEdited,
    PlanProposed,
    PlanStep,
    PlanStepChange,
    PlanStepIn,
    PlanUpdated,
    StepStatus,
)
from codeloop.events.context import ContextBuilt, ContextSpan
from codeloop.events.fleet import WorkerLost
from codeloop.events.handoff import BranchCommitted, CommitMessageWritten, PullRequestOpened
from codeloop.events.mcp import McpServerConnected, McpServerFailed, McpToolsChanged
from codeloop.events.memory import MemoryRecalled, MemoryStored
from codeloop.events.model import (
    AuxiliaryModelCall,
    ModelCallFailed,
    ModelCallFinished,
    ModelCallStarted,
    ModelFellBack,
    ModelRouted,
)
from codeloop.events.network import EgressDecided, NetworkHostAllowed
from codeloop.events.roles import (
    ExplorerFinished,
    ExplorerStarted,
    PlanRevised,
    ReviewGiven,
    ReviewRequested,
    StepChecked,
    SubagentToolCall,
)
from codeloop.events.session import (
    SessionFinished,
    SessionPaused,
    SessionResumed,
    SessionStarted,
    SettingsOverridden,
    SystemNote,
    UserMessage,
)
from codeloop.events.supervision import (
    BaselineRecorded,
    BudgetWarning,
    Compacted,
    LoopDetected,
    ReviewDecided,
    VerificationRan,
)
from codeloop.events.tools import (
    ApprovalGiven,
    ApprovalRequested,
    PolicyDecided,
    ToolCallFinished,
    ToolCallStarted,
)


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
    | EgressDecided
    | NetworkHostAllowed
    | BudgetWarning
    | LoopDetected
    | Compacted
    | ContextBuilt
    | VerificationRan
    | BaselineRecorded
    | ReviewDecided
    | CommitMessageWritten
    | BranchCommitted
    | PullRequestOpened
    | McpServerConnected
    | McpServerFailed
    | McpToolsChanged
    | MemoryRecalled
    | MemoryStored
    | PlanRevised
    | StepChecked
    | ReviewRequested
    | ReviewGiven
    | ExplorerStarted
    | ExplorerFinished
    | SubagentToolCall
    | AdminActionRecorded
    | SpendAlertRaised
    | WorkerLost,
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


_KNOWN_TYPES = {cls.model_fields["type"].default for cls in get_args(get_args(KnownEvent)[0])}
@dataclass(frozen=True)
class StoredEvent:
    """An event with its place in the log."""

    session_id: str
    seq: int
    event: Event


__all__ = [
    "INTERRUPTED_MARKER",
    "SCHEMA_VERSION",
    "AdminActionRecorded",
    "ApprovalGiven",
    "ApprovalRequested",
    "AuxiliaryModelCall",
    "BaselineRecorded",
    "BranchCommitted",
    "BudgetWarning",
    "CommandRan",
    "CommitMessageWritten",
    "Compacted",
    "ContextBuilt",
    "ContextSpan",
    "EgressDecided",
    "Event",
    "EventBase",
    "ExplorerFinished",
    "ExplorerStarted",
    "FileEdited",
    "HookFileData",
    "InstructionSource",
    "KnownEvent",
    "LoopDetected",
    "McpServerConnected",
    "McpServerFailed",
    "McpToolsChanged",
    "MemoryRecalled",
    "MemoryStored",
    "ModelCallFailed",
    "ModelCallFinished",
    "ModelCallStarted",
    "ModelFellBack",
    "ModelRouted",
    "NetworkHostAllowed",
    "PlanProposed",
    "PlanRevised",
    "PlanStep",
    "PlanStepChange",
    "PlanStepIn",
    "PlanUpdated",
    "PolicyDecided",
    "PullRequestOpened",
    "ReviewDecided",
    "ReviewGiven",
    "ReviewRequested",
    "SessionFinished",
    "SessionPaused",
    "SessionResumed",
    "SessionStarted",
    "SettingsOverridden",
    "SpendAlertRaised",
    "StepChecked",
    "StepStatus",
    "StoredEvent",
    "SubagentToolCall",
    "SystemNote",
    "ToolCallData",
    "ToolCallFinished",
    "ToolCallStarted",
    "UnknownEvent",
    "UsageData",
    "UserMessage",
    "VerificationRan",
    "WorkerLost",
    "event_type",
    "now",
    "parse_event",
    "parse_event_json",
]
