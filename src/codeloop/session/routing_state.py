"""The routing part of the session's fold: the router's memory and the usage per model and role.

A fix round is the edits made since the last verification that counted; it failed when the
verification after it (`run_tests`, `run_checks`, or the finish gate's own run) shows new
failures. A verification with none ends the streak. Verifications with no new edits since
the last counted round do not count again, so re-running the tests is not a second failure.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from codeloop.events import (
    AuxiliaryModelCall,
    Event,
    ModelCallFinished,
    ModelFellBack,
    ModelRouted,
    UsageData,
    VerificationRan,
)


@dataclass
class ModelUsage:
    """Calls, tokens and cost of one model in one role."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cost_usd: float = 0.0

    def add(self, usage: UsageData, cost_usd: float) -> None:
        self.calls += 1
        self.input_tokens += usage.input_tokens
        self.output_tokens += usage.output_tokens
        self.cache_read_tokens += usage.cache_read_tokens
        self.cost_usd += cost_usd


@dataclass
class RoutingState:
    # Purpose -> (role, model) as last recorded by `ModelRouted`.
    routes: dict[str, tuple[str, str]] = field(default_factory=dict)
    # Role -> the model the last fallback moved it to.
    held: dict[str, str] = field(default_factory=dict)
    failed_rounds: int = 0
    edits_at_last_round: int = 0
    # (model, role) -> what it used; role "" for calls logged before routing existed.
    usage: dict[tuple[str, str], ModelUsage] = field(default_factory=dict)


def apply_routing(routing: RoutingState, event: Event, edits: int) -> None:
    """Fold one event into `routing`; `edits` is the number of file edits so far."""
    if isinstance(event, ModelRouted):
        routing.routes[event.purpose] = (event.role, event.model)
    elif isinstance(event, ModelFellBack):
        routing.held[event.role] = event.to_model
    elif isinstance(event, ModelCallFinished | AuxiliaryModelCall):
        if not isinstance(event, AuxiliaryModelCall) or event.ok:
            key = (event.model, event.role)
            routing.usage.setdefault(key, ModelUsage()).add(event.usage, event.cost_usd)
    elif isinstance(event, VerificationRan) and event.phase != "baseline":
        if event.new_failures:
            if edits > routing.edits_at_last_round:
                routing.failed_rounds += 1
                routing.edits_at_last_round = edits
        elif event.passed or event.failed:
            routing.failed_rounds = 0
            routing.edits_at_last_round = edits


def usage_rows(routing: RoutingState) -> list[dict[str, object]]:
    """The usage per model and role, most expensive first (for show, export, the web view)."""
    ranked = sorted(routing.usage.items(), key=lambda item: (-item[1].cost_usd, item[0]))
    return [{"model": model, "role": role or "-", "calls": u.calls,
             "input_tokens": u.input_tokens, "output_tokens": u.output_tokens,
             "cache_read_tokens": u.cache_read_tokens, "cost_usd": round(u.cost_usd, 6)}
            for (model, role), u in ranked]
