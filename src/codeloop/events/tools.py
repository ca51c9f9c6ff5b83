"""Events of tool calls: the call, the policy's decision, approvals."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from codeloop.events.base import EventBase, ToolCallData


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
