"""Anthropic Messages API through the official SDK, with prompt-cache breakpoints."""

from __future__ import annotations

import json
import time
from typing import Any

import anthropic
import httpx

from codeloop.config_tables import Price
from codeloop.events import UsageData
from codeloop.llm import toolcalls
from codeloop.llm.openai_provider import context_limit, retry_after_seconds
from codeloop.llm.pricing import cost_of
from codeloop.llm.retry import complete_with_retries
from codeloop.llm.types import (
    AuthenticationFailed,
    Completion,
    ContextWindowExceeded,
    DeltaCallback,
    MalformedResponse,
    Message,
    ModelError,
    ModelNotFound,
    ModelRequest,
    ProviderUnavailable,
    RateLimited,
    StreamDelta,
)

_CACHE = {"type": "ephemeral"}


def to_wire(messages: list[Message]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Split out the system blocks and merge consecutive same-role turns, as the API requires."""
    system: list[dict[str, Any]] = []
    turns: list[dict[str, Any]] = []
    for m in messages:
        if m.role == "system":
            block: dict[str, Any] = {"type": "text", "text": m.content}
            if m.cache_breakpoint:
                block["cache_control"] = _CACHE
            system.append(block)
            continue
        blocks: list[dict[str, Any]] = []
        if m.role == "tool":
            role = "user"
            blocks.append({"type": "tool_result", "tool_use_id": m.tool_call_id,
                           "content": m.content or "(no output)"})
        elif m.role == "assistant":
            role = "assistant"
            if m.content:
                blocks.append({"type": "text", "text": m.content})
            for call in m.tool_calls:
                blocks.append({"type": "tool_use", "id": call.id, "name": call.name,
                               "input": call.arguments if call.arguments is not None else {}})
        else:
            role = "user"
            blocks.append({"type": "text", "text": m.content or "(empty)"})
        if m.cache_breakpoint and blocks:
            blocks[-1]["cache_control"] = _CACHE
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})
    return system, turns


def map_anthropic_error(exc: Exception) -> ModelError:
    if isinstance(exc, anthropic.RateLimitError):
        return RateLimited(f"rate limited by Anthropic: {exc.message}",
                           retry_after_seconds(exc.response.headers))
    if isinstance(exc, anthropic.AuthenticationError | anthropic.PermissionDeniedError):
        return AuthenticationFailed(
            f"Anthropic refused the API key: {exc.message}",
            "set ANTHROPIC_API_KEY (or api_key in the config) to a valid key",
        )
    if isinstance(exc, anthropic.BadRequestError):
        text = str(exc).lower()
        if "prompt is too long" in text or ("context" in text and "window" in text):
            return ContextWindowExceeded(f"the request is larger than the context window: "
                                         f"{exc.message}", limit=context_limit(str(exc)))
        return ModelError(f"Anthropic rejected the request: {exc.message}")
    if isinstance(exc, anthropic.NotFoundError):
        return ModelNotFound(f"Anthropic does not serve this model (HTTP 404): {exc.message}",
                             "check the model name, e.g. anthropic:claude-sonnet-4-5")
    if isinstance(exc, anthropic.APIStatusError):
        if exc.status_code >= 500 or exc.status_code in (408, 409, 529):
            return ProviderUnavailable(f"Anthropic error {exc.status_code}: {exc.message}")
        return ModelError(f"Anthropic error {exc.status_code}: {exc.message}")
    if isinstance(exc, anthropic.APITimeoutError):
        return ProviderUnavailable("the model call timed out")
    if isinstance(exc, anthropic.APIConnectionError | httpx.TransportError):
        return ProviderUnavailable(f"connection to Anthropic failed or dropped: {exc}")
    if isinstance(exc, json.JSONDecodeError | anthropic.APIResponseValidationError | KeyError
                   | TypeError | AttributeError):
        return MalformedResponse(f"Anthropic sent a response that is not valid: {exc}")
    return ModelError(f"model call failed: {exc}")


class AnthropicModel:
    def __init__(
        self,
        model: str,
        api_key: str | None = None,
        base_url: str | None = None,
        price: Price | None = None,
        max_retries: int = 5,
        timeout_s: float = 600.0,
        retry_base_delay: float = 1.0,
    ) -> None:
        self.name = f"anthropic:{model}"
        self.model = model
        self.price = price
        self.max_retries = max_retries
        self.retry_base_delay = retry_base_delay
        self.client = anthropic.Anthropic(api_key=api_key, base_url=base_url, max_retries=0,
                                          timeout=timeout_s)

    def complete(self, request: ModelRequest, on_delta: DeltaCallback | None = None) -> Completion:
        return complete_with_retries(lambda: self._stream(request, on_delta),
                                     map_anthropic_error, self.max_retries,
                                     self.retry_base_delay)

    def _params(self, request: ModelRequest) -> dict[str, Any]:
        system, turns = to_wire(request.messages)
        params: dict[str, Any] = {"model": self.model, "messages": turns,
                                  "max_tokens": request.max_tokens}
        if system:
            params["system"] = system
        if request.temperature is not None:
            params["temperature"] = request.temperature
        if request.tools:
            tools: list[dict[str, Any]] = [
                {"name": t.name, "description": t.description, "input_schema": t.parameters}
                for t in request.tools
            ]
            # The tool schemas are part of the stable prefix: cache through the last one.
            tools[-1]["cache_control"] = _CACHE
            params["tools"] = tools
        return params

    def _stream(self, request: ModelRequest, on_delta: DeltaCallback | None) -> Completion:
        started = time.perf_counter()
        ttft: float | None = None
        text_parts: list[str] = []
        blocks: dict[int, list[Any]] = {}
        usage: dict[str, int] = {}
        stop = ""
        finished = False
        for event in self.client.messages.create(**self._params(request), stream=True):
            kind = event.type
            if kind == "message_start":
                u = event.message.usage
                usage["input"] = u.input_tokens or 0
                usage["cache_read"] = getattr(u, "cache_read_input_tokens", 0) or 0
                usage["cache_write"] = getattr(u, "cache_creation_input_tokens", 0) or 0
                usage["output"] = u.output_tokens or 0
            elif kind == "content_block_start":
                block = event.content_block
                if block.type == "tool_use":
                    blocks[event.index] = [block.id, block.name, ""]
                    if on_delta:
                        on_delta(StreamDelta(tool_name=block.name))
                    if ttft is None:
                        ttft = (time.perf_counter() - started) * 1000
            elif kind == "content_block_delta":
                delta = event.delta
                if delta.type == "text_delta":
                    if ttft is None:
                        ttft = (time.perf_counter() - started) * 1000
                    text_parts.append(delta.text)
                    if on_delta:
                        on_delta(StreamDelta(text=delta.text))
                elif delta.type == "input_json_delta" and event.index in blocks:
                    blocks[event.index][2] += delta.partial_json
            elif kind == "message_delta":
                stop = event.delta.stop_reason or stop
                usage["output"] = event.usage.output_tokens or usage.get("output", 0)
            elif kind == "message_stop":
                finished = True
        if not finished:
            raise ProviderUnavailable("the stream ended before the model finished its answer")
        if "input" not in usage:
            raise MalformedResponse("the stream had no message_start event")
        raw_calls = [(b[0], b[1], b[2]) for _, b in sorted(blocks.items())]
        data = UsageData(
            # Anthropic counts cached tokens apart from input_tokens; ours are inclusive.
            input_tokens=usage["input"] + usage["cache_read"] + usage["cache_write"],
            output_tokens=usage["output"],
            cache_read_tokens=usage["cache_read"],
            cache_write_tokens=usage["cache_write"],
        )
        return Completion(
            text="".join(text_parts), tool_calls=toolcalls.normalise(raw_calls), usage=data,
            cost_usd=cost_of(data, self.price), latency_ms=(time.perf_counter() - started) * 1000,
            ttft_ms=ttft, model=self.model, stop_reason=stop,
        )
