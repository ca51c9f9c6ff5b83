"""OpenAI-compatible servers' quirks, each answered by the fake server, and the fallback taken."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from codeloop.config import Settings
from codeloop.llm.anthropic_provider import AnthropicModel
from codeloop.llm.factory import make_model
from codeloop.llm.openai_provider import OpenAIModel
from codeloop.llm.textmode import FORMAT_ERROR_TOOL, AutoProtocolModel, TextModeModel
from codeloop.llm.toolcalls import calls_in_text, parse_arguments
from codeloop.llm.types import Message, ModelRequest, StreamDelta, ToolSpec
from tests.llm.fake_server import (
    FakeProvider,
    Reply,
    _chunk,
    openai_error,
    openai_message,
    openai_stream,
)

TOOLS = [ToolSpec("read_file", "Read a file", {"type": "object",
                                               "properties": {"path": {"type": "string"}}})]


def request(stream: bool = True, tools: bool = True) -> ModelRequest:
    return ModelRequest(messages=[Message("system", "be brief"), Message("user", "read a.py")],
                        tools=TOOLS if tools else [], stream=stream)


@pytest.fixture
def fake() -> Iterator[FakeProvider]:
    server = FakeProvider().start()
    yield server
    server.stop()


def oai(fake: FakeProvider) -> OpenAIModel:
    return OpenAIModel("m", base_url=fake.url + "/v1", max_retries=2, retry_base_delay=0.01,
                       timeout_s=5)


def test_empty_stream_with_tools_is_retried_without_streaming_and_remembered(
        fake: FakeProvider) -> None:
    fake.replies += [
        Reply(sse=["[DONE]"]),
        Reply(body=openai_message(tool_calls=[("c1", "read_file", '{"path": "a.py"}')])),
        Reply(body=openai_message(tool_calls=[("c2", "read_file", '{"path": "b.py"}')])),
    ]
    model = oai(fake)
    first = model.complete(request())
    assert [c.arguments for c in first.tool_calls] == [{"path": "a.py"}]
    assert model.stream_with_tools_broken and "empty stream" in first.notes[0]
    assert [r["json"].get("stream") for r in fake.requests] == [True, None]
    second = model.complete(request())
    assert second.tool_calls[0].id == "c2" and second.notes == []
    assert fake.requests[2]["json"].get("stream") is None


def test_stream_without_tools_still_streams_after_the_fallback(fake: FakeProvider) -> None:
    fake.replies += [Reply(sse=["[DONE]"]), Reply(body=openai_message("ok")),
                     Reply(sse=openai_stream("hello"))]
    model = oai(fake)
    model.complete(request())
    deltas: list[StreamDelta] = []
    out = model.complete(request(tools=False), deltas.append)
    assert out.text == "hello" and "".join(d.text for d in deltas) == "hello"


def test_rejected_stream_options_are_dropped_and_usage_counted_locally(
        fake: FakeProvider) -> None:
    fake.replies += [openai_error(400, "Unrecognized request argument supplied: stream_options"),
                     Reply(sse=openai_stream("Hello there", usage=None)),
                     Reply(sse=openai_stream("again", usage=None))]
    model = oai(fake)
    out = model.complete(request(tools=False))
    assert out.text == "Hello there" and out.usage.estimated
    assert out.usage.output_tokens == 2 and out.usage.input_tokens > 8
    assert "stream_options" in fake.requests[0]["json"]
    assert "stream_options" not in fake.requests[1]["json"]
    assert any("stream_options" in n for n in out.notes)
    model.complete(request(tools=False))
    assert "stream_options" not in fake.requests[2]["json"]


def test_legacy_function_call_mirrored_beside_tool_calls_is_not_doubled(
        fake: FakeProvider) -> None:
    # llama-cpp-python sends every tool-call piece twice: in tool_calls and in function_call.
    pieces = ['{"path"', ': "a.py"}']
    events = [_chunk({"role": "assistant"})] + [
        _chunk({"function_call": {"name": "read_file", "arguments": p},
                "tool_calls": [{"index": 0, "id": "x", "type": "function",
                                "function": {"name": "read_file", "arguments": p}}]})
        for p in pieces] + [_chunk({}, "tool_calls"), "[DONE]"]
    fake.replies.append(Reply(sse=events))
    out = oai(fake).complete(request())
    assert [(c.name, c.arguments) for c in out.tool_calls] == [("read_file", {"path": "a.py"})]


def test_legacy_function_call_alone_in_a_stream(fake: FakeProvider) -> None:
    events = [_chunk({"role": "assistant"}),
              _chunk({"function_call": {"name": "read_file", "arguments": '{"path":'}}),
              _chunk({"function_call": {"arguments": ' "a.py"}'}}),
              _chunk({}, "function_call"), "[DONE]"]
    fake.replies.append(Reply(sse=events))
    out = oai(fake).complete(request())
    assert [(c.id, c.name, c.arguments) for c in out.tool_calls] == [
        ("call_0", "read_file", {"path": "a.py"})]


def test_reused_and_missing_ids_become_unique(fake: FakeProvider) -> None:
    fake.replies.append(Reply(body=openai_message(tool_calls=[
        ("same", "read_file", '{"path": "a"}'), ("same", "read_file", '{"path": "b"}'),
        ("", "read_file", '{"path": "c"}')])))
    out = oai(fake).complete(request(stream=False))
    ids = [c.id for c in out.tool_calls]
    assert len(set(ids)) == 3 and ids[0] == "same"


def test_tool_call_written_as_text_is_parsed(fake: FakeProvider) -> None:
    text = 'Let me look.\n<tool_call>\n{"name": "read_file", "arguments": {"path": "a.py"}}\n</tool_call>'
    fake.replies.append(Reply(sse=openai_stream(text)))
    out = oai(fake).complete(request())
    assert [(c.name, c.arguments) for c in out.tool_calls] == [("read_file", {"path": "a.py"})]
    assert any("as text" in n for n in out.notes)


def test_fenced_json_tool_call_in_text_and_quoted_code_left_alone() -> None:
    fenced = 'Sure.\n```json\n{"name": "read_file", "arguments": {"path": "x"}}\n```'
    assert calls_in_text(fenced, ["read_file"]) == [(None, "read_file", '{"path": "x"}')]
    quoted = '```json\n{"name": "numpy", "version": "1.0"}\n```'
    assert calls_in_text(quoted, ["read_file"]) == []
    assert calls_in_text(fenced, []) == []


@pytest.mark.parametrize(("raw", "expected"), [
    ("", {}),
    ('{"path": "a.py"}', {"path": "a.py"}),
    ('```json\n{"path": "a.py"}\n```', {"path": "a.py"}),
    ('{"path": "a.py",}', {"path": "a.py"}),
    ('{"paths": ["a", "b",],}', {"paths": ["a", "b"]}),
    ('"{\\"path\\": \\"a.py\\"}"', {"path": "a.py"}),
    ('{"text": "a,}"}', {"text": "a,}"}),
    ('{"path": "a.py"', None),
    ("{'path': 'a.py'}", None),
    ('{"path": "a.py"} and more', None),
    ('["a.py"]', None),
    ('"just a string"', None),
])
def test_argument_repair_is_limited_to_unambiguous_cases(raw: str, expected: object) -> None:
    assert parse_arguments(raw) == expected


def test_auto_protocol_keeps_native_calls_without_an_extra_request(fake: FakeProvider) -> None:
    fake.replies.append(Reply(sse=openai_stream("", [("c1", "read_file", '{"path": "a"}')])))
    model = make_model("openai:m", Settings(base_url=fake.url + "/v1", api_key="k"))
    assert isinstance(model, AutoProtocolModel)
    out = model.complete(request())
    assert model.tool_protocol == "native" and len(fake.requests) == 1
    assert out.notes[0].startswith("tool protocol: native")


def test_auto_protocol_falls_back_to_text_when_the_server_refuses_tools(
        fake: FakeProvider) -> None:
    fake.replies += [openai_error(400, "tools are not supported by this model"),
                     Reply(sse=openai_stream('```json\n{"tool": "read_file", "arguments": '
                                             '{"path": "a.py"}}\n```'))]
    model = make_model("openai:m", Settings(base_url=fake.url + "/v1", api_key="k",
                                            max_retries=0))
    out = model.complete(request())
    assert [(c.name, c.arguments) for c in out.tool_calls] == [("read_file", {"path": "a.py"})]
    assert out.notes[0].startswith("tool protocol: text (the server refused")
    sent = fake.requests[1]["json"]
    assert "tools" not in sent and "read_file(path: string)" in sent["messages"][0]["content"]


def test_auto_protocol_probes_when_the_first_answer_has_no_call(fake: FakeProvider) -> None:
    fake.replies += [Reply(sse=openai_stream("I will read it.")),
                     Reply(body=openai_message("no idea what a ping is")),
                     Reply(sse=openai_stream("oops no block"))]
    model = make_model("openai:m", Settings(base_url=fake.url + "/v1", api_key="k"))
    out = model.complete(request())
    assert fake.requests[1]["json"]["tools"][0]["function"]["name"] == "ping"
    assert out.tool_calls[0].name == FORMAT_ERROR_TOOL
    assert "no fenced JSON action" in out.tool_calls[0].raw_arguments
    assert out.notes[0].startswith("tool protocol: text")


def test_factory_applies_the_configured_protocol(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    assert isinstance(make_model("openai:m", Settings(api_key="k")), OpenAIModel)
    text = make_model("openai:m", Settings(api_key="k", tool_protocol="text"))
    assert isinstance(text, TextModeModel) and isinstance(text.inner, OpenAIModel)
    assert isinstance(make_model("anthropic:c", Settings(api_key="k")), AnthropicModel)
    native = Settings(api_key="k", base_url="http://127.0.0.1:9/v1", tool_protocol="native")
    assert isinstance(make_model("openai:m", native), OpenAIModel)
