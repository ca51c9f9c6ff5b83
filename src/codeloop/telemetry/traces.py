"""OpenTelemetry spans derived from a session's events: session > step > model call and tool
calls, timed by the events' own timestamps. A store subscriber (see store_observed)."""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field

from opentelemetry import trace
from opentelemetry.trace import Span, Status, StatusCode, Tracer

from codeloop.events import (
    Event,
    ModelCallFailed,
    ModelCallFinished,
    ModelCallStarted,
    PolicyDecided,
    SessionFinished,
    SessionPaused,
    SessionResumed,
    SessionStarted,
    StoredEvent,
    ToolCallFinished,
    ToolCallStarted,
)
from codeloop.telemetry import OTLP_ENV


def _ns(ts: float) -> int:
    return int(ts * 1e9)


@dataclass
class _Open:
    """The spans of one session that have started and not ended yet."""

    session: Span
    step: Span | None = None
    step_no: int = 0
    model: Span | None = None
    tools: dict[str, Span] = field(default_factory=dict)
    decisions: dict[str, PolicyDecided] = field(default_factory=dict)


class SessionTracer:
    """Turns appended events into spans; one instance follows any number of sessions."""

    def __init__(self, tracer: Tracer) -> None:
        self.tracer = tracer
        self._open: dict[str, _Open] = {}
        self._lock = threading.Lock()

    def __call__(self, events: list[StoredEvent]) -> None:
        with self._lock:
            for stored in events:
                self._on(stored.session_id, stored.event)

    def _child(self, parent: Span, name: str, ts: float,
               attributes: dict[str, str | int | float | bool]) -> Span:
        return self.tracer.start_span(name, context=trace.set_span_in_context(parent),
                                      start_time=_ns(ts), attributes=attributes)

    def _on(self, sid: str, event: Event) -> None:
        spans = self._open.get(sid)
        if isinstance(event, SessionStarted | SessionResumed):
            if spans is None:
                attrs: dict[str, str | int | float | bool] = {
                    "codeloop.session.id": sid, "codeloop.resumed": isinstance(event,
                                                                               SessionResumed)}
                if isinstance(event, SessionStarted):
                    attrs["gen_ai.request.model"] = event.model
                self._open[sid] = _Open(self.tracer.start_span(
                    "codeloop.session", start_time=_ns(event.ts), attributes=attrs))
            return
        if spans is None:
            return  # a session this process did not see start (its trace lives elsewhere)
        if isinstance(event, ModelCallStarted):
            if spans.step is None or spans.step_no != event.step:
                self._end_step(spans, event.ts)
                spans.step = self._child(spans.session, "codeloop.step", event.ts,
                                         {"codeloop.step": event.step})
                spans.step_no = event.step
            spans.model = self._child(spans.step, "codeloop.model_call", event.ts, {
                "gen_ai.request.model": event.model, "codeloop.role": event.role,
                "codeloop.purpose": event.purpose})
        elif isinstance(event, ModelCallFinished) and spans.model is not None:
            spans.model.set_attributes({
                "gen_ai.response.model": event.model,
                "gen_ai.usage.input_tokens": event.usage.input_tokens,
                "gen_ai.usage.output_tokens": event.usage.output_tokens,
                "codeloop.cost_usd": event.cost_usd, "codeloop.latency_ms": event.latency_ms,
                "codeloop.stop_reason": event.stop_reason, "codeloop.retries": event.retries})
            if event.ttft_ms is not None:
                spans.model.set_attribute("codeloop.time_to_first_token_ms", event.ttft_ms)
            spans.model.end(_ns(event.ts))
            spans.model = None
        elif isinstance(event, ModelCallFailed) and spans.model is not None:
            spans.model.set_attribute("codeloop.error_kind", event.error_kind)
            spans.model.set_status(Status(StatusCode.ERROR, event.error_kind))
            spans.model.end(_ns(event.ts))
            spans.model = None
        elif isinstance(event, PolicyDecided):
            spans.decisions[event.call_id] = event
        elif isinstance(event, ToolCallStarted):
            parent = spans.step if spans.step is not None else spans.session
            attrs = {"codeloop.tool": event.call.name, "codeloop.tool.call_id": event.call.id}
            decided = spans.decisions.pop(event.call.id, None)
            if decided is not None:
                attrs |= {"codeloop.policy.decision": decided.decision,
                          "codeloop.policy.rule": decided.rule}
            spans.tools[event.call.id] = self._child(parent, "codeloop.tool_call", event.ts,
                                                     attrs)
        elif isinstance(event, ToolCallFinished):
            span = spans.tools.pop(event.call_id, None)
            if span is not None:
                _end_tool(span, event)
        elif isinstance(event, SessionFinished | SessionPaused):
            self._end_step(spans, event.ts)
            status = event.status if isinstance(event, SessionFinished) else "paused"
            spans.session.set_attribute("codeloop.status", status)
            spans.session.end(_ns(event.ts))
            del self._open[sid]

    def _end_step(self, spans: _Open, ts: float) -> None:
        for span in [*spans.tools.values(), *([spans.model] if spans.model else [])]:
            span.set_status(Status(StatusCode.ERROR, "not finished"))
            span.end(_ns(ts))
        spans.tools.clear()
        spans.model = None
        if spans.step is not None:
            spans.step.end(_ns(ts))
            spans.step = None


def _end_tool(span: Span, event: ToolCallFinished) -> None:
    span.set_attributes({"codeloop.tool.ok": event.ok,
                         "codeloop.tool.duration_ms": event.duration_ms})
    exit_code = event.data.get("exit_code")
    if isinstance(exit_code, int):
        span.set_attribute("codeloop.tool.exit_code", exit_code)
    if not event.ok:
        span.set_status(Status(StatusCode.ERROR, "interrupted" if event.interrupted
                               else "the tool call failed"))
    span.end(_ns(event.ts))


_provider_lock = threading.Lock()
_configured: SessionTracer | None = None


def configured_tracer() -> SessionTracer | None:
    """A tracer exporting by OTLP/HTTP when OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT is set (the
    exporter reads the rest of the standard OTEL_* settings); None otherwise. One per process."""
    global _configured
    if not any(os.environ.get(name) for name in OTLP_ENV):
        return None
    with _provider_lock:
        if _configured is None:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
            from opentelemetry.sdk.resources import Resource
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import BatchSpanProcessor

            provider = TracerProvider(resource=Resource.create({"service.name": "codeloop"}))
            provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
            _configured = SessionTracer(provider.get_tracer("codeloop"))
        return _configured
