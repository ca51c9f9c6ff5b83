"""Prometheus metrics for the server: counters and histograms fed by appended events (a store
subscriber), gauges read from the store's listing at scrape time."""

from __future__ import annotations

import threading
from collections import Counter as Tally
from collections.abc import Iterator

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from codeloop.errors import CodeloopError
from codeloop.events import (
    AuxiliaryModelCall,
    CommandRan,
    Event,
    ModelCallFinished,
    PolicyDecided,
    StoredEvent,
    ToolCallFinished,
)
from codeloop.session.store import EventStore

# Seconds; model calls run from well under a second (local, cached) to minutes.
_MODEL_BUCKETS = (0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)
_TOOL_BUCKETS = (0.005, 0.025, 0.1, 0.5, 1, 5, 15, 60, 300)


class _Listing(Collector):
    """Sessions by status and approvals waiting, counted from the store when scraped."""

    def __init__(self, store: EventStore) -> None:
        self.store = store

    def collect(self) -> Iterator[GaugeMetricFamily]:
        by_status = Tally(row.status for row in self.store.sessions())
        sessions = GaugeMetricFamily("codeloop_sessions", "Sessions in the store by status",
                                     labels=["status"])
        for status, count in sorted(by_status.items()):
            sessions.add_metric([status], count)
        yield sessions
        yield GaugeMetricFamily("codeloop_approvals_waiting",
                                "Sessions waiting for a person to approve a call or plan",
                                value=by_status.get("waiting_approval", 0))


class Metrics:
    """One registry per server (tests run several in one process). `tenant` is the
    session's owner until tenants exist."""

    def __init__(self, store: EventStore) -> None:
        self.store = store
        self.registry = CollectorRegistry()
        self.registry.register(_Listing(store))
        by_model = ["model", "tenant"]
        self.steps = Counter("codeloop_steps", "Model turns of sessions", by_model,
                             registry=self.registry)
        self.tokens = Counter("codeloop_tokens", "Tokens used by model calls",
                              [*by_model, "direction"], registry=self.registry)
        self.cost = Counter("codeloop_cost_usd", "Dollars spent on model calls", by_model,
                            registry=self.registry)
        self.model_latency = Histogram("codeloop_model_latency_seconds",
                                       "Duration of model calls", ["model"],
                                       buckets=_MODEL_BUCKETS, registry=self.registry)
        self.tool_latency = Histogram("codeloop_tool_latency_seconds",
                                      "Duration of tool calls", ["tool"],
                                      buckets=_TOOL_BUCKETS, registry=self.registry)
        self.spawns = Counter("codeloop_sandbox_spawns", "Commands started in a sandbox",
                              ["sandbox"], registry=self.registry)
        self.denials = Counter("codeloop_policy_denials", "Tool calls the policy denied",
                               ["source"], registry=self.registry)
        self._owners: dict[str, str] = {}
        self._lock = threading.Lock()

    def _tenant(self, session_id: str) -> str:
        with self._lock:
            owner = self._owners.get(session_id)
        if owner is None:
            try:
                owner = self.store.get(session_id).owner
            except CodeloopError:
                owner = "unknown"
            with self._lock:
                self._owners[session_id] = owner
        return owner

    def __call__(self, events: list[StoredEvent]) -> None:
        for stored in events:
            self._count(stored.session_id, stored.event)

    def _count(self, session_id: str, event: Event) -> None:
        if isinstance(event, ModelCallFinished | AuxiliaryModelCall):
            labels = (event.model, self._tenant(session_id))
            if isinstance(event, ModelCallFinished):
                self.steps.labels(*labels).inc()
            self.tokens.labels(*labels, "input").inc(event.usage.input_tokens)
            self.tokens.labels(*labels, "output").inc(event.usage.output_tokens)
            self.cost.labels(*labels).inc(max(event.cost_usd, 0.0))
            self.model_latency.labels(event.model).observe(event.latency_ms / 1000)
        elif isinstance(event, ToolCallFinished) and not event.interrupted:
            self.tool_latency.labels(event.name).observe(event.duration_ms / 1000)
        elif isinstance(event, CommandRan):
            self.spawns.labels(event.sandbox).inc()
        elif isinstance(event, PolicyDecided) and event.decision == "deny":
            self.denials.labels(event.source).inc()

    def exposition(self) -> bytes:
        """The registry in Prometheus' text format."""
        return bytes(generate_latest(self.registry))
