"""codeloop's providers against llama-cpp-python (a server nobody on this project wrote)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from codeloop.config import Settings
from codeloop.config_tables import Budgets
from codeloop.llm.factory import make_model
from codeloop.llm.local_provider import LocalModel, load_llama
from codeloop.llm.openai_provider import OpenAIModel
from codeloop.llm.textmode import FORMAT_ERROR_TOOL, TextModeModel
from codeloop.llm.types import Message, Model, ModelRequest, StreamDelta, ToolSpec
from codeloop.session.setup import build_runner, open_store, start_session

pytestmark = [pytest.mark.interop, pytest.mark.slow]

READ = ToolSpec("read_file", "Read a file", {"type": "object", "required": ["path"],
                                             "properties": {"path": {"type": "string"}}})
FORCE_READ = {"tool_choice": {"type": "function", "function": {"name": "read_file"}}}
VALID_END = {"finished", "budget_exceeded", "stuck", "error", "context_overflow", "needs_human"}


def ask(text: str, tools: list[ToolSpec] | None = None, stream: bool = True) -> ModelRequest:
    return ModelRequest(messages=[Message("system", "You are a helpful assistant."),
                                  Message("user", text)], tools=tools or [], max_tokens=24,
                        temperature=0.0, stream=stream)


@pytest.fixture(scope="module", params=["server", "inprocess"])
def backend(request: pytest.FixtureRequest, gguf: Path) -> tuple[str, Any]:
    if request.param == "server":
        return "server", request.getfixturevalue("llama_server")
    # One thread: the suite shares two cores among its workers, and llama.cpp's threads
    # spin waiting for each other there (a 1200-token prompt: 25 s of CPU on two, 9 s on one).
    return "inprocess", LocalModel(gguf, {"n_ctx": 4096, "chat_format": "chatml-function-calling",
                                          "seed": 1, "n_threads": 1}).llama


def model_for(backend: tuple[str, Any], gguf: Path, forced: bool = False) -> OpenAIModel:
    kind, handle = backend
    extra = FORCE_READ if forced else None
    if kind == "server":
        return OpenAIModel("smollm2", base_url=handle, max_retries=1, retry_base_delay=0.1,
                           timeout_s=120, extra_body=extra)
    model = LocalModel(gguf, llama=handle)
    model.extra_body = dict(extra or {})
    return model


def test_n_threads_also_caps_the_threads_reading_a_prompt(gguf: Path) -> None:
    llama = load_llama(gguf, {"n_threads": 1})
    assert (llama.n_threads, llama.n_threads_batch) == (1, 1)
    both = load_llama(gguf, {"n_threads": 1, "n_threads_batch": 2})
    assert (both.n_threads, both.n_threads_batch) == (1, 2)


def test_plain_chat_with_usage(backend: tuple[str, Any], gguf: Path) -> None:
    out = model_for(backend, gguf).complete(ask("Say hello.", stream=False))
    assert out.text.strip() and out.stop_reason in ("stop", "length")
    assert out.usage.input_tokens > 5 and 0 < out.usage.output_tokens <= 24
    assert not out.usage.estimated


def test_streaming_delivers_deltas_and_counts_usage(backend: tuple[str, Any], gguf: Path) -> None:
    deltas: list[StreamDelta] = []
    out = model_for(backend, gguf).complete(ask("Name three colours."), deltas.append)
    assert len(deltas) > 1 and "".join(d.text for d in deltas) == out.text
    assert out.ttft_ms is not None and out.latency_ms >= out.ttft_ms
    # This server sends no usage in streams: counted locally and marked so.
    assert out.usage.output_tokens > 0 and out.usage.input_tokens > 5
    assert out.usage.estimated


def test_native_tool_call(backend: tuple[str, Any], gguf: Path) -> None:
    out = model_for(backend, gguf, forced=True).complete(ask("Read a.py", [READ], stream=False))
    assert [c.name for c in out.tool_calls] == ["read_file"]
    call = out.tool_calls[0]
    assert call.id and (call.arguments is None or isinstance(call.arguments, dict))
    assert out.usage.input_tokens > 0 and not out.usage.estimated


def test_tool_call_with_streaming(backend: tuple[str, Any], gguf: Path) -> None:
    model = model_for(backend, gguf, forced=True)
    out = model.complete(ask("Read a.py", [READ]))
    assert [c.name for c in out.tool_calls] == ["read_file"]
    # Either the stream carried the call or it came back empty and the fallback took over.
    assert model.stream_with_tools_broken == any("empty stream" in n for n in out.notes)
    again = model.complete(ask("Read b.py", [READ]))
    assert [c.name for c in again.tool_calls] == ["read_file"]


def test_text_mode_tools(backend: tuple[str, Any], gguf: Path) -> None:
    model = TextModeModel(model_for(backend, gguf))
    out = model.complete(ask("Read the file a.py", [READ]))
    assert len(out.tool_calls) == 1
    call = out.tool_calls[0]
    assert call.name == "read_file" or (call.name == FORMAT_ERROR_TOOL
                                        and call.raw_arguments.startswith("format error: "))


def make_repo(root: Path) -> Path:
    repo = root / "repo"
    repo.mkdir()
    (repo / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (repo / "test_calc.py").write_text("from calc import add\n\n"
                                       "def test_add():\n    assert add(2, 3) == 5\n")
    for cmd in (["init", "-q"], ["add", "."], ["-c", "user.name=t", "-c", "user.email=t@t",
                                               "commit", "-qm", "init"]):
        subprocess.run(["git", *cmd], cwd=repo, check=True)
    return repo


def run_session(tmp_path: Path, model: Model, settings: Settings) -> list[Any]:
    repo = make_repo(tmp_path)
    store = open_store(tmp_path / "data")
    sid = start_session(store, "make test_calc.py pass", repo, settings, model.name)
    runner = build_runner(store, sid, repo, settings, model, base_dir=tmp_path / "data")
    state = runner.run()
    assert state.is_over
    return [e.event for e in store.read(sid)]


def check_log(events: list[Any]) -> None:
    kinds = [e.type for e in events]
    finished = [e for e in events if e.type == "session_finished"]
    assert len(finished) == 1 and finished[0].status in VALID_END, finished
    started = {e.call.id for e in events if e.type == "tool_call_started"}
    done = {e.call_id for e in events if e.type == "tool_call_finished"}
    assert started <= done
    assert "model_call_finished" in kinds
    for event in events:
        if event.type == "model_call_failed":
            # A model error ends the session cleanly; it must not be a crash of ours.
            assert event.error_kind != "malformed_response", event
    # Every call either ran or was answered with a precise format/validation error.
    for event in events:
        if event.type == "tool_call_finished" and not event.ok:
            assert event.error, event


def test_short_agent_session(backend: tuple[str, Any], gguf: Path, tmp_path: Path) -> None:
    kind, handle = backend
    # One session per backend keeps the suite short: the server one picks its protocol by
    # itself (auto), the in-process one is told to use text mode.
    settings = Settings(budgets=Budgets(max_steps=3), max_output_tokens=32,
                        tool_protocol="auto" if kind == "server" else "text",
                        local={"n_ctx": 4096, "chat_format": "chatml-function-calling"})
    if kind == "server":
        settings.base_url, settings.api_key = handle, "none"
        model = make_model("openai:smollm2", settings)
    else:
        from codeloop.llm.factory import with_tool_protocol

        model = with_tool_protocol(LocalModel(gguf, llama=handle), settings)
    events = run_session(tmp_path, model, settings)
    check_log(events)
    # Every turn was parsed into calls (each answered: run, or refused with an error) or,
    # without any call, answered with a note telling the model to act.
    for n, event in enumerate(events):
        if event.type != "model_call_finished":
            continue
        if event.tool_calls:
            answered = {e.call_id for e in events[n:] if e.type == "tool_call_finished"}
            assert {c.id for c in event.tool_calls} <= answered
        else:
            assert events[n + 1].type == "system_note" and events[n + 1].kind == "no_action"
    if settings.tool_protocol == "text":
        # Text mode turns every reply into a call: an action, or a format error.
        assert all(e.tool_calls for e in events if e.type == "model_call_finished")
