"""Spans derived from a scripted session's events: one session span, a step per model turn,
a model call and the tool calls under each step, with the attributes the events carry."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from codeloop.errors import ConfigError
from codeloop.session.setup import build_runner, open_store, start_session
from codeloop.session.store_observed import ObservedStore
from codeloop.telemetry.traces import SessionTracer
from tests.session.helpers import FIX_SCRIPT, make_repo, scripted, settings


def traced_run(tmp_path: Path) -> tuple[list[ReadableSpan], str]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    store = ObservedStore(open_store(tmp_path / "data"),
                          [SessionTracer(provider.get_tracer("test"))])
    repo = make_repo(tmp_path)
    model = scripted(FIX_SCRIPT)
    cfg = settings()
    sid = start_session(store, "make the tests pass", repo, cfg, model.name)
    state = build_runner(store, sid, repo, cfg, model, base_dir=tmp_path / "data").run()
    assert state.status == "finished"
    return list(exporter.get_finished_spans()), sid


def test_a_scripted_session_gives_the_expected_span_tree(tmp_path: Path) -> None:
    spans, sid = traced_run(tmp_path)
    by_name: dict[str, list[ReadableSpan]] = {}
    for span in spans:
        by_name.setdefault(span.name, []).append(span)
    [session] = by_name["codeloop.session"]
    assert session.parent is None and session.attributes is not None
    assert session.attributes["codeloop.session.id"] == sid
    assert session.attributes["codeloop.status"] == "finished"
    steps = by_name["codeloop.step"]
    assert [s.attributes["codeloop.step"] for s in steps] == [1, 2, 3, 4, 5]  # type: ignore[index]
    assert all(s.parent is not None and s.parent.span_id == session.context.span_id
               for s in steps)
    step_ids = {s.context.span_id: s.attributes["codeloop.step"] for s in steps}  # type: ignore[index]
    models = by_name["codeloop.model_call"]
    assert sorted(step_ids[m.parent.span_id] for m in models) == [1, 2, 3, 4, 5]  # type: ignore[union-attr]
    for m in models:
        attrs = m.attributes or {}
        assert attrs["gen_ai.request.model"] == "scripted"
        assert attrs["gen_ai.usage.output_tokens"] > 0  # type: ignore[operator]
        assert "codeloop.cost_usd" in attrs
        assert m.start_time is not None and m.end_time is not None
        assert m.start_time <= m.end_time
    tools = by_name["codeloop.tool_call"]
    names = [(step_ids[t.parent.span_id], t.attributes["codeloop.tool"])  # type: ignore[union-attr, index]
             for t in sorted(tools, key=lambda t: t.start_time or 0)]
    assert names == [(1, "read_file"), (2, "run"), (3, "edit_file"), (4, "run"), (5, "finish")]
    runs = [t for t in sorted(tools, key=lambda t: t.start_time or 0)
            if (t.attributes or {})["codeloop.tool"] == "run"]
    assert [(r.attributes or {})["codeloop.tool.exit_code"] for r in runs] == [1, 0]
    assert runs[0].status.status_code is StatusCode.ERROR
    assert all((r.attributes or {})["codeloop.policy.decision"] == "allow" for r in runs)
    assert all((t.attributes or {})["codeloop.tool.duration_ms"] >= 0 for t in tools)  # type: ignore[operator]
    # Every span is inside the session's time.
    assert all(session.start_time <= s.start_time and s.end_time <= session.end_time  # type: ignore[operator]
               for s in spans)


def test_tracing_without_the_sdk_installed_is_a_config_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
    monkeypatch.setitem(sys.modules, "codeloop.telemetry.traces", None)
    with pytest.raises(ConfigError, match=r"codeloop\[otel\]"):
        open_store(tmp_path / "data")
