"""Provider faults injected against local servers speaking the OpenAI and Anthropic wire
protocols, through the real providers (their own retries first) and the real fallback path.

Each kind alternates which protocol fails; the next model in the chain is the other server.
A refused key (401) is injected too, as a control: it must NOT fall back.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import Any

from tests.llm.fake_server import (
    FakeProvider,
    Reply,
    anthropic_error,
    anthropic_stream,
    openai_error,
    openai_stream,
)

from codeloop.context.compaction import compact
from codeloop.context.tokens import get_counter, messages_tokens
from codeloop.events import ToolCallData
from codeloop.llm.anthropic_provider import AnthropicModel
from codeloop.llm.fallback import FellBack, complete_with_fallback
from codeloop.llm.openai_provider import OpenAIModel
from codeloop.llm.scripted import ScriptedModel, Turn
from codeloop.llm.types import AuthenticationFailed, Message, Model, ModelError, ModelRequest

RETRIES = 2
ANSWER = "recovered"
Script = Callable[[str, int], list[Reply]]


def _answer(protocol: str) -> Reply:
    return Reply(sse=anthropic_stream(ANSWER) if protocol == "anthropic" else openai_stream(ANSWER))


def _server_error(protocol: str, n: int) -> list[Reply]:
    if protocol == "anthropic":
        return [anthropic_error(529, "overloaded_error", "Overloaded")] * (RETRIES + 1)
    status = (500, 502, 503)[n % 3]
    return [Reply(status=status, body={"error": {"message": f"upstream error {status}"}})] \
        * (RETRIES + 1)


def _dropped_stream(protocol: str, n: int) -> list[Reply]:
    events = anthropic_stream("half an ans") if protocol == "anthropic" else openai_stream("half")
    return [Reply(sse=events, cut_after=2 + n % 2)] * (RETRIES + 1)


def _rate_limited(protocol: str, n: int) -> list[Reply]:
    if protocol == "anthropic":
        reply = anthropic_error(429, "rate_limit_error", "Number of request tokens has exceeded "
                                                         "your per-minute rate limit")
        reply.headers = {"retry-after": "0"}
        return [reply] * (RETRIES + 1)
    return [openai_error(429, "Rate limit reached for gpt-4.1 on tokens per min",
                         "rate_limit_exceeded", headers={"retry-after-ms": "10"})] * (RETRIES + 1)


def _not_found(protocol: str, n: int) -> list[Reply]:
    if protocol == "anthropic":
        return [anthropic_error(404, "not_found_error", "model: claude-nonexistent")]
    return [openai_error(404, "The model `gpt-nonexistent` does not exist or you do not have "
                              "access to it.", "model_not_found")]


def _too_long(protocol: str) -> Reply:
    if protocol == "anthropic":
        return anthropic_error(400, "invalid_request_error",
                               "prompt is too long: 210345 tokens > 200000 maximum")
    return openai_error(400, "This model's maximum context length is 128000 tokens. However, "
                             "your messages resulted in 131072 tokens.", "context_length_exceeded")


def _too_long_once(protocol: str, n: int) -> list[Reply]:
    return [_too_long(protocol), _answer(protocol)]  # compacted, the same model answers


def _too_long_twice(protocol: str, n: int) -> list[Reply]:
    return [_too_long(protocol), _too_long(protocol)]  # compacted, still too long: next model


def _refused_key(protocol: str, n: int) -> list[Reply]:
    if protocol == "anthropic":
        return [anthropic_error(401, "authentication_error", "invalid x-api-key")]
    return [openai_error(401, "Incorrect API key provided", "invalid_api_key")]


# (kind, replies of the failing server, None: nothing listens on its port)
KINDS: list[tuple[str, Script | None]] = [
    ("5xx after retries", _server_error), ("stream dropped after retries", _dropped_stream),
    ("connection refused", None), ("429 past the retry budget", _rate_limited),
    ("404 model not found", _not_found),
    ("context too long: compact, same model", _too_long_once),
    ("context too long twice: next model", _too_long_twice),
]


def _model(protocol: str, url: str) -> Model:
    if protocol == "anthropic":
        return AnthropicModel("claude-sonnet-4", api_key="k", base_url=url,
                              max_retries=RETRIES, retry_base_delay=0.01, timeout_s=5)
    return OpenAIModel("gpt-4.1", api_key="k", base_url=url + "/v1", max_retries=RETRIES,
                       retry_base_delay=0.01, timeout_s=5)


def _request() -> ModelRequest:
    """A conversation long enough that compaction has older turns to summarise."""
    messages = [Message("system", "You are a coding agent.", cache_breakpoint=True),
                Message("user", "Task: fix add()")]
    for n in range(10):
        call = ToolCallData(id=f"c{n}", name="read_file", arguments={"path": f"m{n}.py"})
        messages += [Message("assistant", "", tool_calls=[call]),
                     Message("tool", f"line of m{n}.py\n" * 300, tool_call_id=call.id)]
    return ModelRequest(messages=messages)


def _shrink(sent: ModelRequest, exc: ModelError) -> ModelRequest | None:
    """The loop's answer to a too-long request: compact the conversation (really), smaller."""
    summariser = ScriptedModel([Turn(text="## Progress\nread ten modules")], name="small")
    counter = get_counter()
    result = compact(sent.messages, messages_tokens(sent.messages, counter) // 2, summariser,
                     counter)
    return ModelRequest(messages=result.messages)


def _dead_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"


def _once(script: Script | None, protocol: str, n: int, failing: FakeProvider,
          backup: FakeProvider) -> tuple[str | ModelError, int]:
    """(the answer, or the error that ended the chain; moves along it) for one fault."""
    other = "openai" if protocol == "anthropic" else "anthropic"
    for server in (failing, backup):
        server.replies.clear()
        server.requests.clear()
    failing.replies += script(protocol, n) if script else []
    backup.replies.append(_answer(other))
    first = _model(protocol, failing.url if script else _dead_url())
    moves: list[FellBack] = []
    try:
        completion, _ = complete_with_fallback([first, _model(other, backup.url)], _request(),
                                               on_fall_back=moves.append, shrink=_shrink)
    except ModelError as exc:
        return exc, len(moves)
    return completion.text, len(moves)


def inject_faults(times: int) -> dict[str, Any]:
    """Inject each kind `times` times; print a table; the figures for the JSON line."""
    failing, backup = FakeProvider().start(), FakeProvider().start()
    by_kind: dict[str, int] = {}
    injected = recovered = 0
    try:
        print(f"faults: each kind {times}× through the real providers ({RETRIES} retries "
              "each) and llm.fallback; the next model speaks the other protocol")
        for kind, script in KINDS:
            outcomes = [_once(script, ("openai", "anthropic")[n % 2], n, failing, backup)
                        for n in range(times)]
            ok = sum(answer == ANSWER for answer, _ in outcomes)
            print(f"  {kind:<40} recovered {ok}/{times} "
                  f"(moves along the chain: {sum(m for _, m in outcomes)})")
            by_kind[kind] = ok
            injected += times
            recovered += ok
        refused = 0
        for n in range(times):
            answer, _ = _once(_refused_key, ("openai", "anthropic")[n % 2], n, failing, backup)
            refused += isinstance(answer, AuthenticationFailed) and backup.requests == []
        print(f"  {'401 refused key (control: no fallback)':<40} stopped at once {refused}/{times}")
    finally:
        failing.stop()
        backup.stop()
    return {"fallback_recovered": recovered, "fallback_injected": injected,
            "fallback_by_kind": by_kind, "auth_failures_not_fallen_back": refused}
