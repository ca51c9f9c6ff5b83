"""The fallback chain against local servers speaking the providers' wire protocols, with the
faults injected as those providers send them."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from codeloop.llm.anthropic_provider import AnthropicModel
from codeloop.llm.fallback import FellBack, complete_with_fallback
from codeloop.llm.openai_provider import OpenAIModel
from codeloop.llm.types import (
    AuthenticationFailed,
    ContextWindowExceeded,
    Message,
    ModelRequest,
    ProviderUnavailable,
)
from tests.llm.fake_server import (
    FakeProvider,
    Reply,
    anthropic_error,
    anthropic_stream,
    openai_error,
    openai_stream,
)

RETRIES = 1
# OpenAI's own answer to a request past the window (HTTP 400, code context_length_exceeded).
OPENAI_TOO_LONG = openai_error(
    400, "This model's maximum context length is 8192 tokens. However, your messages resulted "
         "in 9120 tokens. Please reduce the length of the messages.", "context_length_exceeded")
ANTHROPIC_TOO_LONG = anthropic_error(400, "invalid_request_error",
                                     "prompt is too long: 210345 tokens > 200000 maximum")


@pytest.fixture
def primary() -> Iterator[FakeProvider]:
    server = FakeProvider().start()
    yield server
    server.stop()


@pytest.fixture
def backup() -> Iterator[FakeProvider]:
    server = FakeProvider().start()
    yield server
    server.stop()


def oai(url: str, name: str = "gpt-4.1") -> OpenAIModel:
    return OpenAIModel(name, api_key="k", base_url=url + "/v1", max_retries=RETRIES,
                       retry_base_delay=0.01, timeout_s=5)


def ant(url: str) -> AnthropicModel:
    return AnthropicModel("claude-sonnet-4", api_key="k", base_url=url, max_retries=RETRIES,
                          retry_base_delay=0.01, timeout_s=5)


def request(text: str = "fix the bug") -> ModelRequest:
    return ModelRequest(messages=[Message("system", "be brief", cache_breakpoint=True),
                                  Message("user", text)])


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run(chain: list[OpenAIModel | AnthropicModel], moves: list[FellBack], **kw: object
        ) -> tuple[str, str]:
    completion, model = complete_with_fallback(chain, request(), on_fall_back=moves.append,
                                               **kw)  # type: ignore[arg-type]
    return completion.text, model.name


def test_5xx_after_the_providers_retries_moves_to_the_next_model(
        primary: FakeProvider, backup: FakeProvider) -> None:
    primary.replies += [Reply(status=503, body={"error": {"message": "overloaded"}})] * (RETRIES + 1)
    backup.replies.append(Reply(sse=anthropic_stream("from the backup")))
    moves: list[FellBack] = []
    assert run([oai(primary.url), ant(backup.url)], moves) == (
        "from the backup", "anthropic:claude-sonnet-4")
    assert len(primary.requests) == RETRIES + 1  # its own retries came first
    assert [(m.from_model, m.to_model, m.cause) for m in moves] == [
        ("openai:gpt-4.1", "anthropic:claude-sonnet-4", "provider_unavailable")]
    assert "503" in moves[0].error and "overloaded" in moves[0].error


def test_connection_refused_moves_to_the_next_model(backup: FakeProvider) -> None:
    backup.replies.append(Reply(sse=openai_stream("answered")))
    moves: list[FellBack] = []
    dead = oai(f"http://127.0.0.1:{free_port()}")
    assert run([dead, oai(backup.url, "gpt-4.1-mini")], moves) == (
        "answered", "openai:gpt-4.1-mini")
    assert moves[0].cause == "provider_unavailable" and "connection" in moves[0].error.lower()


def test_429_past_the_retry_budget_moves_to_the_next_model(
        primary: FakeProvider, backup: FakeProvider) -> None:
    limited = openai_error(429, "Rate limit reached for gpt-4.1", "rate_limit_exceeded",
                           headers={"retry-after-ms": "10"})
    primary.replies += [limited] * (RETRIES + 1)
    backup.replies.append(Reply(sse=openai_stream("not limited here")))
    moves: list[FellBack] = []
    assert run([oai(primary.url), oai(backup.url, "gpt-4o")], moves)[0] == "not limited here"
    assert len(primary.requests) == RETRIES + 1
    assert moves[0].cause == "rate_limited"


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_model_the_endpoint_does_not_serve_moves_on_without_retrying(
        provider: str, primary: FakeProvider, backup: FakeProvider) -> None:
    if provider == "openai":
        primary.replies.append(openai_error(
            404, "The model `gpt-9` does not exist or you do not have access to it.",
            "model_not_found"))
        first: OpenAIModel | AnthropicModel = oai(primary.url, "gpt-9")
    else:
        primary.replies.append(anthropic_error(404, "not_found_error", "model: claude-9"))
        first = ant(primary.url)
    backup.replies.append(Reply(sse=openai_stream("served")))
    moves: list[FellBack] = []
    assert run([first, oai(backup.url)], moves)[0] == "served"
    assert len(primary.requests) == 1  # a wrong name does not get better by asking again
    assert moves[0].cause == "model_not_found"


@pytest.mark.parametrize("too_long", [OPENAI_TOO_LONG, ANTHROPIC_TOO_LONG],
                         ids=["openai", "anthropic"])
def test_context_too_long_compacts_then_retries_the_same_model_once(
        too_long: Reply, primary: FakeProvider, backup: FakeProvider) -> None:
    anthropic = too_long is ANTHROPIC_TOO_LONG
    primary.replies += [too_long, Reply(sse=anthropic_stream("fits now") if anthropic
                                        else openai_stream("fits now"))]
    first = ant(primary.url) if anthropic else oai(primary.url)
    limits: list[int | None] = []

    def shrink(sent: ModelRequest, exc: ContextWindowExceeded) -> ModelRequest:
        limits.append(exc.limit)
        return request("SUMMARY of the earlier turns")

    moves: list[FellBack] = []
    assert run([first, oai(backup.url)], moves, shrink=shrink) == ("fits now", first.name)
    assert limits == [200000 if anthropic else 8192]  # the window the provider named
    assert moves == [] and backup.requests == []
    sent = primary.requests[1]["json"]["messages"]
    assert "SUMMARY of the earlier turns" in str(sent)


def test_context_too_long_again_goes_to_the_next_model_with_the_compacted_request(
        primary: FakeProvider, backup: FakeProvider) -> None:
    primary.replies += [OPENAI_TOO_LONG, OPENAI_TOO_LONG]
    backup.replies.append(Reply(sse=anthropic_stream("a larger window")))
    shrinks: list[int] = []

    def shrink(sent: ModelRequest, exc: ContextWindowExceeded) -> ModelRequest:
        shrinks.append(1)
        return request("SUMMARY")

    moves: list[FellBack] = []
    assert run([oai(primary.url), ant(backup.url)], moves, shrink=shrink)[0] == "a larger window"
    assert len(primary.requests) == 2 and shrinks == [1]  # compacted once, retried once
    assert moves[0].cause == "context_window_exceeded"
    assert "SUMMARY" in str(backup.requests[0]["json"]["messages"])


def test_context_too_long_with_nothing_to_compact_moves_on_at_once(
        primary: FakeProvider, backup: FakeProvider) -> None:
    primary.replies.append(OPENAI_TOO_LONG)
    backup.replies.append(Reply(sse=openai_stream("ok")))
    moves: list[FellBack] = []
    assert run([oai(primary.url), oai(backup.url, "gpt-4o")], moves,
               shrink=lambda sent, exc: None)[0] == "ok"
    assert len(primary.requests) == 1 and moves[0].cause == "context_window_exceeded"


@pytest.mark.parametrize("status", [401, 403])
def test_a_refused_key_is_a_configuration_error_not_a_fallback(
        status: int, primary: FakeProvider, backup: FakeProvider) -> None:
    primary.replies.append(openai_error(status, "Incorrect API key provided: sk-…",
                                        "invalid_api_key"))
    backup.replies.append(Reply(sse=openai_stream("must not be asked")))
    moves: list[FellBack] = []
    with pytest.raises(AuthenticationFailed) as info:
        run([oai(primary.url), oai(backup.url)], moves)
    assert "configuration error" in info.value.message and "OPENAI_API_KEY" in info.value.hint
    assert backup.requests == [] and moves == []


def test_a_chain_that_fails_everywhere_raises_the_last_error(
        primary: FakeProvider, backup: FakeProvider) -> None:
    primary.replies += [Reply(status=500, body={"error": {"message": "boom"}})] * (RETRIES + 1)
    backup.replies += [anthropic_error(529, "overloaded_error", "Overloaded")] * (RETRIES + 1)
    moves: list[FellBack] = []
    with pytest.raises(ProviderUnavailable) as info:
        run([oai(primary.url), ant(backup.url)], moves)
    assert "529" in info.value.message
    assert len(moves) == 1
