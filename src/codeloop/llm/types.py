"""Provider-neutral request and response types; the loop never sees a wire format."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from codeloop.errors import CodeloopError
from codeloop.events import ToolCallData, UsageData

Role = Literal["system", "user", "assistant", "tool"]


@dataclass
class Message:
    role: Role
    content: str = ""
    tool_calls: list[ToolCallData] = field(default_factory=list)
    tool_call_id: str | None = None
    name: str | None = None
    # Marks the end of the stable prefix so providers with prompt caching can set a breakpoint.
    cache_breakpoint: bool = False


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    parameters: dict[str, Any]


@dataclass
class ModelRequest:
    messages: list[Message]
    tools: list[ToolSpec] = field(default_factory=list)
    max_tokens: int = 4096
    temperature: float | None = None
    stream: bool = True
    # Model calls already completed in this session (scripted models use it as their place).
    step: int = 0


@dataclass
class Completion:
    text: str = ""
    tool_calls: list[ToolCallData] = field(default_factory=list)
    usage: UsageData = field(default_factory=UsageData)
    cost_usd: float = 0.0
    latency_ms: float = 0.0
    ttft_ms: float | None = None
    model: str = ""
    stop_reason: str = ""
    retries: int = 0
    # What the provider had to work around for this call (a fallback taken, a protocol
    # chosen), for the session log; empty when nothing unusual happened.
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class StreamDelta:
    """A piece of a streamed answer: text, or a note that a tool call is being written."""

    text: str = ""
    tool_name: str | None = None


DeltaCallback = Callable[[StreamDelta], None]


@runtime_checkable
class Model(Protocol):
    """One interface over every provider."""

    name: str

    def complete(self, request: ModelRequest, on_delta: DeltaCallback | None = None) -> Completion:
        """Run one model call; stream deltas to `on_delta` when given."""
        ...


class ModelError(CodeloopError):
    """A model call failed; `kind` names the failure for the log."""

    kind = "model_error"
    retryable = False


class RateLimited(ModelError):
    kind = "rate_limited"
    retryable = True

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message, "wait and resume the session, or raise your provider's limits")
        self.retry_after = retry_after


class ProviderUnavailable(ModelError):
    kind = "provider_unavailable"
    retryable = True


class ContextWindowExceeded(ModelError):
    kind = "context_window_exceeded"

    def __init__(self, message: str, hint: str = "", limit: int | None = None) -> None:
        super().__init__(message, hint)
        # The window the provider named in its error, when it did: what to compact down to.
        self.limit = limit


class ModelNotFound(ModelError):
    """The endpoint does not serve this model (HTTP 404): a name, or a server, is wrong."""

    kind = "model_not_found"


class AuthenticationFailed(ModelError):
    kind = "authentication_failed"


class MalformedResponse(ModelError):
    kind = "malformed_response"
    retryable = True


class ScriptExhausted(ModelError):
    kind = "script_exhausted"
