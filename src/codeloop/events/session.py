"""Events of a session's life: start, resume, messages, pause and finish."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from codeloop.events.base import EventBase, HookFileData, InstructionSource


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
    # A follow-up after the session ended (an editor's next prompt): the session is open
    # again and this is its next instruction.
    reopens: bool = False


class SystemNote(EventBase):
    """A message codeloop itself puts in front of the model (budget warning, loop nudge)."""

    type: Literal["system_note"] = "system_note"
    text: str
    kind: str = "note"
    # It quotes repository text (fenced as data): the session is tainted as by a tool's.
    untrusted: bool = False


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
