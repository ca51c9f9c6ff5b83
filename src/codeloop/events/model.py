"""Events of model calls: started, finished, failed, routed, fallen back."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from codeloop.events.base import EventBase, ToolCallData, UsageData


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
    # The explorer (subagent) that made the call; "" for the session's own side calls.
    subagent: str = ""
