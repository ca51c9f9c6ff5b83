"""Providers through the official SDKs against a local server speaking their wire protocols."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from codeloop.config_tables import Price
from codeloop.llm.anthropic_provider import AnthropicModel
from codeloop.llm.openai_provider import OpenAIModel
from codeloop.llm.types import (
    AuthenticationFailed,
    ContextWindowExceeded,
    Message,
    ModelRequest,
    ProviderUnavailable,
    RateLimited,
    StreamDelta,
    ToolSpec,
)
from tests.llm.fake_server import (
    FakeProvider,
    Reply,
    anthropic_error,
    anthropic_stream,
    openai_error,
    openai_message,
    openai_stream,
)

TOOLS = [ToolSpec("read_file", "Read a file", {"type": "object",
                                               "properties": {"path": {"type": "string"}}})]


def request(stream: bool = True) -> ModelRequest:
    return ModelRequest(messages=[Message("system", "be brief", cache_breakpoint=True),
                                  Message("user", "read a.py")], tools=TOOLS, stream=stream)


@pytest.fixture
def fake() -> Iterator[FakeProvider]:
    server = FakeProvider().start()
    yield server
    server.stop()


def oai(fake: FakeProvider, retries: int = 3) -> OpenAIModel:
    return OpenAIModel("gpt-4o", api_key="k", base_url=fake.url + "/v1", max_retries=retries,
                       price=Price(input=2.5, output=10, cache_read=1.25), retry_base_delay=0.01,
                       timeout_s=5)


def ant(fake: FakeProvider, retries: int = 3) -> AnthropicModel:
    return AnthropicModel("claude-sonnet-4", api_key="k", base_url=fake.url, max_retries=retries,
                          price=Price(input=3, output=15, cache_read=0.3, cache_write=3.75),
                          retry_base_delay=0.01, timeout_s=5)


# --- OpenAI ------------------------------------------------------------------------------------


def test_openai_stream_text_and_tool_calls(fake: FakeProvider) -> None:
    fake.replies.append(Reply(sse=openai_stream("Reading it now.", [("c1", "read_file",
                                                                     '{"path": "a.py"}')],
                                                usage=(1000, 50, 400))))
    deltas: list[StreamDelta] = []
    out = oai(fake).complete(request(), deltas.append)
    assert out.text == "Reading it now."
    assert [(c.id, c.name, c.arguments) for c in out.tool_calls] == [
        ("c1", "read_file", {"path": "a.py"})]
    assert out.usage.input_tokens == 1000 and out.usage.output_tokens == 50
    assert out.usage.cache_read_tokens == 400 and not out.usage.estimated
    assert out.cost_usd == pytest.approx((600 * 2.5 + 400 * 1.25 + 50 * 10) / 1e6)
    assert out.ttft_ms is not None and out.latency_ms >= out.ttft_ms
    assert "".join(d.text for d in deltas) == "Reading it now."
    sent = fake.requests[0]["json"]
    assert sent["stream"] is True and sent["tools"][0]["function"]["name"] == "read_file"
    assert sent["messages"][0] == {"role": "system", "content": "be brief"}


def test_openai_non_streaming(fake: FakeProvider) -> None:
    fake.replies.append(Reply(body=openai_message("hi", [("c9", "read_file", '{"path":"b"}')])))
    out = oai(fake).complete(request(stream=False))
    assert out.tool_calls[0].arguments == {"path": "b"}
    assert out.usage.input_tokens == 10


def test_openai_429_honours_retry_after(fake: FakeProvider) -> None:
    fake.replies += [openai_error(429, "slow down", headers={"retry-after": "0.2"}),
                     Reply(sse=openai_stream("ok"))]
    out = oai(fake).complete(request())
    assert out.text == "ok" and out.retries == 1
    assert len(fake.requests) == 2


def test_openai_429_gives_up_after_retries(fake: FakeProvider) -> None:
    fake.replies += [openai_error(429, "slow down", headers={"retry-after": "0"})] * 3
    with pytest.raises(RateLimited):
        oai(fake, retries=2).complete(request())
    assert len(fake.requests) == 3


def test_openai_500_then_success(fake: FakeProvider) -> None:
    fake.replies += [openai_error(500, "boom"), openai_error(503, "busy"),
                     Reply(sse=openai_stream("fine"))]
    assert oai(fake).complete(request()).retries == 2


def test_openai_malformed_json_is_retried_then_reported(fake: FakeProvider) -> None:
    fake.replies += [Reply(raw="{not json")] * 2
    with pytest.raises(Exception) as info:
        oai(fake, retries=1).complete(request(stream=False))
    assert "valid" in str(info.value).lower()


def test_openai_malformed_stream_chunk(fake: FakeProvider) -> None:
    fake.replies += [Reply(sse=["{broken"]), Reply(sse=openai_stream("recovered"))]
    assert oai(fake).complete(request()).text == "recovered"


def test_openai_stream_cut_midway_is_retried(fake: FakeProvider) -> None:
    events = openai_stream("a long answer that is cut", [("c1", "read_file", '{"path":"x"}')])
    fake.replies += [Reply(sse=events, cut_after=4), Reply(sse=openai_stream("complete"))]
    out = oai(fake).complete(request())
    assert out.text == "complete" and out.retries == 1


def test_openai_stream_cut_every_time_raises(fake: FakeProvider) -> None:
    fake.replies += [Reply(sse=openai_stream("cut"), cut_after=2)] * 2
    with pytest.raises(ProviderUnavailable):
        oai(fake, retries=1).complete(request())


def test_openai_slow_first_token_is_measured(fake: FakeProvider) -> None:
    fake.replies.append(Reply(sse=openai_stream("late"), delay_first_s=0.3))
    out = oai(fake).complete(request())
    assert out.ttft_ms is not None and out.ttft_ms >= 250


def test_openai_context_length_error_is_typed(fake: FakeProvider) -> None:
    fake.replies.append(openai_error(400, "This model's maximum context length is 8192 tokens",
                                     code="context_length_exceeded"))
    with pytest.raises(ContextWindowExceeded):
        oai(fake).complete(request())
    assert len(fake.requests) == 1


def test_openai_bad_key(fake: FakeProvider) -> None:
    fake.replies.append(openai_error(401, "invalid api key"))
    with pytest.raises(AuthenticationFailed) as info:
        oai(fake).complete(request())
    assert "OPENAI_API_KEY" in info.value.hint


def test_openai_missing_usage_is_estimated(fake: FakeProvider) -> None:
    fake.replies.append(Reply(sse=openai_stream("no usage here", usage=None)))
    out = oai(fake).complete(request())
    assert out.usage.estimated and out.usage.output_tokens > 0


def test_openai_invalid_tool_arguments_kept_raw(fake: FakeProvider) -> None:
    fake.replies.append(Reply(sse=openai_stream("", [("c1", "read_file", '{"path": ')])))
    call = oai(fake).complete(request()).tool_calls[0]
    assert call.arguments is None and call.raw_arguments == '{"path": '


# --- Anthropic -----------------------------------------------------------------------------------


def test_anthropic_stream_with_cache_breakpoints(fake: FakeProvider) -> None:
    fake.replies.append(Reply(sse=anthropic_stream(
        "Let me look.", [("toolu_1", "read_file", '{"path": "a.py"}')],
        usage=(100, 40, 2000, 500))))
    deltas: list[StreamDelta] = []
    out = ant(fake).complete(request(), deltas.append)
    assert out.text == "Let me look."
    assert out.tool_calls[0].id == "toolu_1" and out.tool_calls[0].arguments == {"path": "a.py"}
    assert out.usage.input_tokens == 2600 and out.usage.cache_read_tokens == 2000
    assert out.usage.cache_write_tokens == 500 and out.usage.output_tokens == 40
    assert out.cost_usd == pytest.approx((100 * 3 + 2000 * 0.3 + 500 * 3.75 + 40 * 15) / 1e6)
    sent = fake.requests[0]["json"]
    assert sent["system"][-1]["cache_control"] == {"type": "ephemeral"}
    assert sent["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    assert sent["messages"][0]["role"] == "user"


def test_anthropic_tool_results_become_user_blocks(fake: FakeProvider) -> None:
    from codeloop.events import ToolCallData

    fake.replies.append(Reply(sse=anthropic_stream("done")))
    req = request()
    req.messages += [
        Message("assistant", "", tool_calls=[ToolCallData(id="t1", name="read_file",
                                                          arguments={"path": "a"})]),
        Message("tool", "contents", tool_call_id="t1"),
        Message("user", "[codeloop] note"),
    ]
    ant(fake).complete(req)
    turns = fake.requests[0]["json"]["messages"]
    assert [t["role"] for t in turns] == ["user", "assistant", "user"]
    assert turns[2]["content"][0] == {"type": "tool_result", "tool_use_id": "t1",
                                      "content": "contents"}
    assert turns[2]["content"][1]["text"] == "[codeloop] note"


def test_anthropic_429_and_overloaded(fake: FakeProvider) -> None:
    fake.replies += [
        Reply(status=429, headers={"retry-after": "0.1"},
              body={"type": "error", "error": {"type": "rate_limit_error", "message": "slow"}}),
        anthropic_error(529, "overloaded_error", "overloaded"),
        Reply(sse=anthropic_stream("ok")),
    ]
    out = ant(fake).complete(request())
    assert out.text == "ok" and out.retries == 2


def test_anthropic_stream_cut(fake: FakeProvider) -> None:
    fake.replies += [Reply(sse=anthropic_stream("partial answer here"), cut_after=3),
                     Reply(sse=anthropic_stream("whole"))]
    assert ant(fake).complete(request()).text == "whole"


def test_anthropic_context_error(fake: FakeProvider) -> None:
    fake.replies.append(anthropic_error(400, "invalid_request_error",
                                        "prompt is too long: 250000 tokens > 200000 maximum"))
    with pytest.raises(ContextWindowExceeded):
        ant(fake).complete(request())


def test_anthropic_malformed_event(fake: FakeProvider) -> None:
    fake.replies += [Reply(sse=[("message_start", {"type": "message_start"})]),
                     Reply(sse=anthropic_stream("fine"))]
    assert ant(fake).complete(request()).text == "fine"
