"""OpenAI Chat Completions (and every compatible server) through the official SDK."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx
import openai

from codeloop.config_tables import Price
from codeloop.events import UsageData
from codeloop.llm import toolcalls
from codeloop.llm.pricing import cost_of
from codeloop.llm.retry import complete_with_retries
from codeloop.llm.toolcalls import RawCall
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

_CONTEXT_MARKERS = ("context_length_exceeded", "maximum context length", "context window",
                    "too many tokens", "prompt is too long", "exceeds the available context size")
# How providers name the window in their error: OpenAI and vLLM ("maximum context length is
# 8192 tokens"), llama.cpp ("the available context size (4096 tokens)"), Anthropic
# ("prompt is too long: 210000 tokens > 200000 maximum").
_WINDOW = re.compile(r"maximum context length is (\d+)|context size \((\d+) tokens\)"
                     r"|> (\d+) maximum")


def context_limit(text: str) -> int | None:
    """The context window a provider's error names, if it names one."""
    match = _WINDOW.search(text)
    return int(next(g for g in match.groups() if g)) if match else None


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
        elif m.role == "user" and out and out[-1]["role"] == "user":
            # The repo map and the task are two user messages; chat templates of local
            # servers often insist that roles alternate. Caching here is by prefix anyway.
            out[-1]["content"] = f"{out[-1]['content']}\n\n{m.content}"
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
                                         f"{exc.message}", limit=context_limit(str(exc)))
        return ModelError(f"the provider rejected the request: {exc.message}")
    if isinstance(exc, openai.NotFoundError):
        return ModelNotFound(f"the provider does not serve this model (HTTP 404): {exc.message}",
                             "check the model name, and that the base URL ends in /v1")
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


def _usage_of(raw: Any) -> UsageData:
    details = getattr(raw, "prompt_tokens_details", None)
    return UsageData(
        input_tokens=raw.prompt_tokens or 0,
        output_tokens=raw.completion_tokens or 0,
        cache_read_tokens=(getattr(details, "cached_tokens", 0) or 0) if details else 0,
    )


def _rejects_stream_options(exc: Exception) -> bool:
    return (isinstance(exc, openai.BadRequestError | openai.UnprocessableEntityError)
            and ("stream_options" in str(exc) or "include_usage" in str(exc)))


@dataclass
class _Answer:
    """What one call produced, before it becomes a Completion."""

    text: str = ""
    calls: list[RawCall] = field(default_factory=list)
    usage: UsageData | None = None
    stop: str = ""
    ttft_ms: float | None = None


class BrokenToolStream(ProviderUnavailable):
    """A stream with tools ended empty or without finishing; retried without streaming."""


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
        extra_body: dict[str, Any] | None = None,
    ) -> None:
        self.name = f"openai:{model}"
        self.model = model
        self.price = price
        self.max_retries = max_retries
        self.retry_base_delay = retry_base_delay
        # Server-specific request fields (e.g. `tool_choice`, llama.cpp sampling options).
        self.extra_body = dict(extra_body or {})
        # Learned from this server, once, for the life of this instance.
        self.stream_with_tools_broken = False
        self.stream_options_rejected = False
        # The SDK's own retries are off: ours record each attempt and honour retry-after.
        self.client = openai.OpenAI(api_key=api_key or "not-needed", base_url=base_url,
                                    max_retries=0, timeout=timeout_s)

    def complete(self, request: ModelRequest, on_delta: DeltaCallback | None = None) -> Completion:
        notes: list[str] = []

        def attempt() -> Completion:
            started = time.perf_counter()
            return self._build(request, self._answer(request, on_delta, notes), started, notes)

        return complete_with_retries(attempt, map_openai_error, self.max_retries,
                                     self.retry_base_delay)

    def _answer(self, request: ModelRequest, on_delta: DeltaCallback | None,
                notes: list[str]) -> _Answer:
        if not request.stream or (request.tools and self.stream_with_tools_broken):
            answer = self._once(request)
            if request.stream and on_delta is not None and answer.text:
                on_delta(StreamDelta(text=answer.text))
            return answer
        try:
            return self._stream(request, on_delta, notes)
        except BrokenToolStream as exc:
            self.stream_with_tools_broken = True
            notes.append(f"{exc.message}; this model is called without streaming when tools "
                         "are present from now on")
            return self._once(request)

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
        if self.extra_body:
            params["extra_body"] = self.extra_body
        return params

    def _build(self, request: ModelRequest, answer: _Answer, started: float,
               notes: list[str]) -> Completion:
        calls = answer.calls
        if not calls and request.tools:
            calls = toolcalls.calls_in_text(answer.text, [t.name for t in request.tools])
            if calls:
                notes.append(f"{toolcalls.TEXT_CALLS_NOTE} {len(calls)} tool call(s) as text in its answer; "
                             "parsed them as tool calls")
        usage = answer.usage or toolcalls.estimate_usage(request, answer.text, calls)
        return Completion(
            text=answer.text, tool_calls=toolcalls.normalise(calls), usage=usage,
            cost_usd=cost_of(usage, self.price),
            latency_ms=(time.perf_counter() - started) * 1000, ttft_ms=answer.ttft_ms,
            model=self.model, stop_reason=answer.stop, notes=list(notes),
        )

    def _once(self, request: ModelRequest) -> _Answer:
        resp = self._create(self._params(request))
        if not resp.choices:
            raise MalformedResponse("the provider returned no choices")
        msg = resp.choices[0].message
        raw_calls: list[RawCall] = [(c.id, c.function.name, c.function.arguments)
                                    for c in (msg.tool_calls or []) if c.type == "function"]
        legacy = getattr(msg, "function_call", None)
        if legacy is not None and not raw_calls:
            raw_calls = [(None, legacy.name, legacy.arguments)]
        return _Answer(text=msg.content or "", calls=raw_calls,
                       usage=_usage_of(resp.usage) if resp.usage is not None else None,
                       stop=resp.choices[0].finish_reason or "")

    def _open_stream(self, request: ModelRequest, notes: list[str]) -> Any:
        params = {**self._params(request), "stream": True}
        if self.stream_options_rejected:
            return self._create(params)
        try:
            return self._create({**params, "stream_options": {"include_usage": True}})
        except openai.APIStatusError as exc:
            if not _rejects_stream_options(exc):
                raise
            self.stream_options_rejected = True
            notes.append("the server rejected stream_options; streaming without it (usage is "
                         "counted locally when the server sends none)")
            return self._create(params)

    def _create(self, params: dict[str, Any]) -> Any:
        """One Chat Completions call: a response, or an iterator of chunks when streaming."""
        return self.client.chat.completions.create(**params)

    def _stream(self, request: ModelRequest, on_delta: DeltaCallback | None,
                notes: list[str]) -> _Answer:
        started = time.perf_counter()
        answer = _Answer()
        text_parts: list[str] = []
        calls: dict[int, list[Any]] = {}
        for chunk in self._open_stream(request, notes):
            if chunk.usage is not None:
                answer.usage = _usage_of(chunk.usage)
            if not chunk.choices:
                continue
            choice = chunk.choices[0]
            delta = choice.delta
            if choice.finish_reason:
                answer.stop = choice.finish_reason
            if delta is None:
                continue
            if delta.content:
                if answer.ttft_ms is None:
                    answer.ttft_ms = (time.perf_counter() - started) * 1000
                text_parts.append(delta.content)
                if on_delta:
                    on_delta(StreamDelta(text=delta.content))
            for tc in delta.tool_calls or []:
                if answer.ttft_ms is None:
                    answer.ttft_ms = (time.perf_counter() - started) * 1000
                slot = calls.setdefault(tc.index, [None, "", ""])
                if tc.id:
                    slot[0] = tc.id
                if tc.function is not None:
                    if tc.function.name and tc.function.name != slot[1]:
                        # Some servers repeat the full name in every chunk; others send
                        # it in pieces. A repeat of the whole name is not a new piece.
                        slot[1] += tc.function.name
                        if on_delta:
                            on_delta(StreamDelta(tool_name=tc.function.name))
                    if tc.function.arguments:
                        slot[2] += tc.function.arguments
            legacy = getattr(delta, "function_call", None)
            # llama.cpp's server mirrors each tool-call chunk into the legacy field as
            # well: read it only from servers that send nothing else.
            if legacy is not None and not delta.tool_calls:
                slot = calls.setdefault(0, [None, "", ""])
                slot[1] += legacy.name or ""
                slot[2] += legacy.arguments or ""
        answer.text = "".join(text_parts)
        answer.calls = [(c[0], c[1], c[2]) for _, c in sorted(calls.items())]
        if request.tools and not answer.text and not answer.calls:
            # Some servers (llama-cpp-python with function-calling chat formats) answer a
            # streamed request with tools by an empty stream, every time: retrying the same
            # way cannot help, so the same call is sent without streaming.
            raise BrokenToolStream("the server sent an empty stream for a request with tools")
        if answer.stop == "":
            # No finish_reason means the stream was cut (or never started): retry the call.
            raise ProviderUnavailable("the stream ended before the model finished its answer")
        return answer
