"""The session's model calls: routed by purpose, moved along the fallback chain, and logged.

Every call is attributable: a turn's `ModelCallStarted/Finished/Failed` and a side call's
`AuxiliaryModelCall` carry the role and the model; `ModelRouted` records a changed choice,
`ModelFellBack` each move along a chain. The router reads only what the log folds to, so a
resumed session sends the same purpose to the same model.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from codeloop.events import (
    AuxiliaryModelCall,
    Event,
    ModelCallFailed,
    ModelCallFinished,
    ModelCallStarted,
    ModelFellBack,
    ModelRouted,
)
from codeloop.llm.fallback import FellBack, Shrink, complete_with_fallback
from codeloop.llm.router import Phase, Purpose, Route, Router, Signals
from codeloop.llm.types import Completion, DeltaCallback, ModelError, ModelRequest
from codeloop.session.state import SessionState


def signals(state: SessionState, phase: Phase | None = None) -> Signals:
    """What the router needs from the session, all of it folded from the log (the phase of a
    session with roles too: `session.plan_exec`)."""
    return Signals(planning=state.plan is None and not state.edits, phase=phase,
                   failed_rounds=state.routing.failed_rounds, held=dict(state.routing.held))


class RoutedCalls:
    """Makes the loop's model calls through the router and the fallback chain."""

    def __init__(self, router: Router, emit: Callable[[Event], None],
                 state: Callable[[], SessionState]) -> None:
        self.router = router
        self.emit = emit
        self.state = state
        # With roles, whose turn it is (`Conductor.phase`); None routes as one agent.
        self.phase: Callable[[SessionState], Phase] | None = None

    def turn(self, request: ModelRequest, on_delta: DeltaCallback | None = None,
             shrink: Shrink | None = None) -> Completion:
        """One turn of the loop; a `ModelError` (logged) when its whole chain failed."""
        state = self.state()
        route = self.router.turn(signals(state, self.phase(state) if self.phase else None))
        self._announce(route)
        step = self.state().steps + 1
        attributed = {"role": route.role, "purpose": route.purpose}
        self.emit(ModelCallStarted(step=step, model=route.model,
                                   message_count=len(request.messages), **attributed))
        try:
            completion, model = complete_with_fallback(
                route.chain, request, on_delta, on_fall_back=self._recorder(route),
                shrink=shrink)
        except ModelError as exc:
            self.emit(ModelCallFailed(step=step, model=route.model, error_kind=exc.kind,
                                      message=exc.message, retryable=exc.retryable,
                                      **attributed))
            raise
        self.emit(ModelCallFinished(
            step=step, model=completion.model or model.name, text=completion.text,
            tool_calls=completion.tool_calls, usage=completion.usage,
            cost_usd=completion.cost_usd, latency_ms=completion.latency_ms,
            ttft_ms=completion.ttft_ms, stop_reason=completion.stop_reason,
            retries=completion.retries, notes=completion.notes, **attributed,
        ))
        return completion

    def side(self, purpose: Purpose, request: ModelRequest,
             on_delta: DeltaCallback | None = None, subagent: str = "") -> Completion:
        """A call beside the turns (a summary, a classification, an explorer's turn: its
        `subagent`), logged with its cost."""
        route = self.router.side(purpose, signals(self.state()))
        self._announce(route)
        begin = time.perf_counter()
        try:
            completion, model = complete_with_fallback(route.chain, request, on_delta,
                                                       on_fall_back=self._recorder(route))
        except ModelError as exc:
            self.emit(AuxiliaryModelCall(
                purpose=purpose, role=route.role, model=route.model, ok=False,
                latency_ms=(time.perf_counter() - begin) * 1000, error_kind=exc.kind,
                message=exc.message, subagent=subagent))
            raise
        self.emit(AuxiliaryModelCall(
            purpose=purpose, role=route.role, model=completion.model or model.name,
            usage=completion.usage, cost_usd=completion.cost_usd,
            latency_ms=completion.latency_ms, subagent=subagent))
        return completion

    def side_model(self, purpose: Purpose) -> SideModel:
        """A `Model` whose calls go through `side` (what compaction takes as its summariser)."""
        return SideModel(self, purpose)

    def _announce(self, route: Route) -> None:
        if self.state().routing.routes.get(route.purpose) != (route.role, route.model):
            self.emit(ModelRouted(purpose=route.purpose, role=route.role, model=route.model,
                                  reason=route.reason))

    def _recorder(self, route: Route) -> Callable[[FellBack], None]:
        def record(move: FellBack) -> None:
            self.emit(ModelFellBack(purpose=route.purpose, role=route.role,
                                    from_model=move.from_model, to_model=move.to_model,
                                    cause=move.cause, error=move.error))
        return record


class SideModel:
    """One side purpose as a `Model`."""

    def __init__(self, calls: RoutedCalls, purpose: Purpose) -> None:
        self.calls = calls
        self.purpose: Purpose = purpose
        self.name = f"routed:{purpose}"

    def complete(self, request: ModelRequest, on_delta: DeltaCallback | None = None
                 ) -> Completion:
        return self.calls.side(self.purpose, request, on_delta)
