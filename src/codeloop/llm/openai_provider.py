"""OpenAI Chat Completions (and every compatible server) through the official SDK."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

import httpx
import openai

from codeloop.config import Price
from codeloop.events import ToolCallData, UsageData
from codeloop.llm import toolcalls
from codeloop.llm.pricing import cost_of
from codeloop.llm.retry import with_retries
from codeloop.llm.types import (
    AuthenticationFailed,
    Completion,
    ContextWindowExceeded,
    DeltaCallback,
    MalformedResponse,
    Message,
    ModelError,
    ModelRequest,
    ProviderUnavailable,
    RateLimited,
    StreamDelta,
)

_CONTEXT_MARKERS = ("context_length_exceeded", "maximum context length", "context window",
                    "too many tokens", "prompt is too long")


def to_wire_messages(messages: list[Message]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for m in messages:
        if m.role == "tool":
            out.append({"role": "tool", "tool_call_id": m.tool_call_id, "content": m.content})
        elif m.role == "assistant":
            msg: dict[str, Any] = {"role": "assistant", "content": m.content or None}
            if m.tool_calls:
                msg["tool_calls"] = [
                    {"id": c.id, "type": "function",
                     "function": {"name": c.name,
                                  "arguments": c.raw_arguments or json.dumps(c.arguments or {})}}
                    for c in m.tool_calls
                ]
            out.append(msg)
        else:
            out.append({"role": m.role, "content": m.content})
    return out


def retry_after_seconds(headers: Mapping[str, str] | None) -> float | None:
    if headers is None:
        return None
    for key in ("retry-after-ms", "retry-after"):
        value = headers.get(key)
        if value is None:
            continue
        try:
            seconds = float(value)
        except ValueError:
            continue
        return seconds / 1000 if key.endswith("-ms") else seconds
    return None


def map_openai_error(exc: Exception) -> ModelError:
    """Translate the SDK's exceptions into codeloop's typed model errors."""
    if isinstance(exc, openai.RateLimitError):
        return RateLimited(f"rate limited by the provider: {exc.message}",
                           retry_after_seconds(exc.response.headers))
    if isinstance(exc, openai.AuthenticationError | openai.PermissionDeniedError):
        return AuthenticationFailed(
            f"the provider refused the API key: {exc.message}",
            "set OPENAI_API_KEY (or CODELOOP_API_KEY / api_key in the config) to a valid key",
        )
    if isinstance(exc, openai.BadRequestError):
        text = str(exc).lower()
        if any(marker in text for marker in _CONTEXT_MARKERS):
            return ContextWindowExceeded(f"the request is larger than the model's context window: "
                                         f"{exc.message}")
        return ModelError(f"the provider rejected the request: {exc.message}")
    if isinstance(exc, openai.APIStatusError):
        if exc.status_code >= 500 or exc.status_code in (408, 409):
            return ProviderUnavailable(f"provider error {exc.status_code}: {exc.message}")
        return ModelError(f"provider error {exc.status_code}: {exc.message}")
    if isinstance(exc, openai.APITimeoutError):
        return ProviderUnavailable("the model call timed out")
    if isinstance(exc, openai.APIConnectionError | httpx.TransportError):
        return ProviderUnavailable(f"connection to the provider failed or dropped: {exc}")
    if isinstance(exc, json.JSONDecodeError | openai.APIResponseValidationError | KeyError
                   | TypeError | AttributeError):
        return MalformedResponse(f"the provider sent a response that is not valid: {exc}")
    return ModelError(f"model call failed: {exc}")


class OpenAIModel:
    """A model behind the Chat Completions API: OpenAI, vLLM, Ollama, llama.cpp, LM Studio..."""

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
        self.name = f"openai:{model}"
        self.model = model
        self.price = price
        self.max_retries = max_retries
        self.retry_base_delay = retry_base_delay
        # The SDK's own retries are off: ours record each attempt and honour retry-after.
        self.client = openai.OpenAI(api_key=api_key or "not-needed", base_url=base_url,
                                    max_retries=0, timeout=timeout_s)

    def complete(self, request: ModelRequest, on_delta: DeltaCallback | None = None) -> Completion:
        def attempt() -> Completion:
            try:
                if request.stream:
                    return self._stream(request, on_delta)
                return self._once(request)
            except ModelError:
                raise
            except Exception as exc:
                raise map_openai_error(exc) from exc

        completion, retries = with_retries(attempt, self.max_retries,
                                           base_delay=self.retry_base_delay)
        completion.retries = retries
        return completion

    def _params(self, request: ModelRequest) -> dict[str, Any]:
        params: dict[str, Any] = {
            "model": self.model,
            "messages": to_wire_messages(request.messages),
            "max_tokens": request.max_tokens,
        }
        if request.temperature is not None:
            params["temperature"] = request.temperature
        if request.tools:
            params["tools"] = [
                {"type": "function",
                 "function": {"name": t.name, "description": t.description,
                              "parameters": t.parameters}}
                for t in request.tools
            ]
        return params

    def _finish(self, text: str, calls: list[ToolCallData], usage: UsageData, stop: str,
                started: float, ttft: float | None) -> Completion:
        return Completion(
            text=text, tool_calls=calls, usage=usage, cost_usd=cost_of(usage, self.price),
            latency_ms=(time.perf_counter() - started) * 1000, ttft_ms=ttft, model=self.model,
            stop_reason=stop,
        )

    def _once(self, request: ModelRequest) -> Completion:
        started = time.perf_counter()
        resp = self.client.chat.completions.create(**self._params(request))
        if not resp.choices:
            raise MalformedResponse("the provider returned no choices")
        msg = resp.choices[0].message
        raw_calls = [(c.id, c.function.name, c.function.arguments)
                     for c in (msg.tool_calls or []) if c.type == "function"]
        legacy = getattr(msg, "function_call", None)
        if legacy is not None and not raw_calls:
            raw_calls = [(None, legacy.name, legacy.arguments)]
        usage = UsageData()
        if resp.usage is not None:
            details = getattr(resp.usage, "prompt_tokens_details", None)
            usage = UsageData(
                input_tokens=resp.usage.prompt_tokens or 0,
                output_tokens=resp.usage.completion_tokens or 0,
                cache_read_tokens=(getattr(details, "cached_tokens", 0) or 0) if details else 0,
            )
        else:
            usage = toolcalls.estimate_usage(request, msg.content or "", raw_calls)
        return self._finish(msg.content or "", toolcalls.normalise(raw_calls), usage,
                            resp.choices[0].finish_reason or "", started, None)

    def _stream(self, request: ModelRequest, on_delta: DeltaCallback | None) -> Completion:
        started = time.perf_counter()
        ttft: float | None = None
        text_parts: list[str] = []
        calls: dict[int, list[Any]] = {}
        usage: UsageData | None = None
        stop = ""
        stream = self.client.chat.completions.create(
            **self._params(request), stream=True, stream_options={"include_usage": True}
        )
        for chunk in stream:
            if chunk.usage is not None:
                details = getattr(chunk.usage, "prompt_tokens_details", None)
                usage = UsageData(
                    input_tokens=chunk.usage.prompt_tokens or 0,
                    output_tokens=chunk.usage.completion_tokens or 0,
                    cache_read_tokens=(getattr(details, "cached_tokens", 0) or 0)
                    if details else 0,
                )
            if not chunk.choices:
                continue
            choice = chunk.choices[0]
            delta = choice.delta
            if choice.finish_reason:
                stop = choice.finish_reason
            if delta is None:
                continue
            if delta.content:
                if ttft is None:
                    ttft = (time.perf_counter() - started) * 1000
                text_parts.append(delta.content)
                if on_delta:
                    on_delta(StreamDelta(text=delta.content))
            for tc in delta.tool_calls or []:
                if ttft is None:
                    ttft = (time.perf_counter() - started) * 1000
                slot = calls.setdefault(tc.index, [None, "", ""])
                if tc.id:
                    slot[0] = tc.id
                if tc.function is not None:
                    if tc.function.name:
                        slot[1] += tc.function.name
                        if on_delta:
                            on_delta(StreamDelta(tool_name=tc.function.name))
                    if tc.function.arguments:
                        slot[2] += tc.function.arguments
            legacy = getattr(delta, "function_call", None)
            if legacy is not None:
                slot = calls.setdefault(0, [None, "", ""])
                slot[1] += legacy.name or ""
                slot[2] += legacy.arguments or ""
        if stop == "":
            # No finish_reason means the stream was cut (or never started): retry the call.
            raise ProviderUnavailable("the stream ended before the model finished its answer")
        raw_calls = [(c[0], c[1], c[2]) for _, c in sorted(calls.items())]
        text = "".join(text_parts)
        if usage is None:
            usage = toolcalls.estimate_usage(request, text, raw_calls)
        return self._finish(text, toolcalls.normalise(raw_calls), usage, stop, started, ttft)
