"""The loop: build messages → call the model → validate → decide → run tools → record → check.

Every step is an event appended before the loop moves on, so a killed process resumes
from the log: `Runner(...).run()` on an existing session continues where it stopped.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable

from codeloop.config_tables import Budgets, RolesSettings
from codeloop.context.compaction import ContextOverflow
from codeloop.events import (
    INTERRUPTED_MARKER,
    BudgetWarning,
    Event,
    FileEdited,
    LoopDetected,
    SessionFinished,
    SessionPaused,
    SessionResumed,
    StoredEvent,
    SystemNote,
    ToolCallFinished,
)
from codeloop.index.service import RepoIndex
from codeloop.index.warmup import WARMUP_SERVICE, IndexWarmup
from codeloop.llm.router import RoleModels, Router
from codeloop.llm.types import (
    ContextWindowExceeded,
    DeltaCallback,
    Model,
    ModelError,
    ScriptExhausted,
)
from codeloop.planner.model import Plan
from codeloop.policy.engine import PolicyEngine
from codeloop.policy.redact import Redactor
from codeloop.session.authorise import Approver, Gatekeeper, session_hook_guard
from codeloop.session.budgets import check_budgets, warning_text
from codeloop.session.context_feed import ContextFeed
from codeloop.session.control import Control
from codeloop.session.explore import EXPLORERS, Explorers
from codeloop.session.finish_gate import FinishGate, FinishStatus
from codeloop.session.loops import detect_loop
from codeloop.session.observe import redact_event
from codeloop.session.plan_exec import Conductor
from codeloop.session.plan_gate import PlanGate
from codeloop.session.review import REVIEW_STATE
from codeloop.session.routing import RoutedCalls
from codeloop.session.state import SessionState, apply, fold
from codeloop.session.store import EventStore
from codeloop.session.tool_calls import ToolCalls
from codeloop.session.turn_request import TurnRequests
from codeloop.tools.base import ToolContext
from codeloop.tools.plan_tools import CURRENT_PLAN
from codeloop.tools.registry import ToolRegistry

# `ctx.services[STEP_NOTES](state)`: events to add before a model turn (memories recalled
# for the plan step being worked).
STEP_NOTES = "step_notes"
# How the pause reason starts when a resumed session's model failed before answering.
MODEL_SILENT = "the model did not answer"


class Runner(ToolCalls):
    """One session's loop over its event log; the tool calls run in `ToolCalls`."""

    def __init__(
        self,
        store: EventStore,
        session_id: str,
        model: Model,
        registry: ToolRegistry,
        tool_ctx: ToolContext,
        budgets: Budgets,
        policy: PolicyEngine | None = None,
        approver: Approver | None = None,
        finish_gate: FinishGate | None = None,
        on_event: Callable[[StoredEvent], None] | None = None,
        on_delta: DeltaCallback | None = None,
        control: Control | None = None,
        max_output_tokens: int = 8192,
        context_window: int | None = None,
        summariser: Model | None = None,
        plan_approval: bool = False,
        redactor: Redactor | None = None,
        router: Router | None = None,
        context: ContextFeed | None = None,
        roles: RolesSettings | None = None,
    ) -> None:
        self.store = store
        self.session_id = session_id
        self.registry = registry
        self.ctx = tool_ctx
        self.ctx.emit = self._emit_one
        self.ctx.session_id = session_id
        self.ctx.services[CURRENT_PLAN] = self._current_plan
        self.budgets = budgets
        self.policy = policy
        self.approver = approver
        self.gate = Gatekeeper(policy, approver, self._emit_one) if policy is not None else None
        self.plans = PlanGate(plan_approval, approver, self._emit_one)
        self.finish_gate = finish_gate
        self.on_event = on_event
        self.on_delta = on_delta
        self.control = control or Control()
        # Without a router every call goes to `model`, compaction summaries to `summariser`.
        self.calls = RoutedCalls(router or Router(RoleModels.single(model, summariser)),
                                 self._emit, lambda: self.state)
        self.requests = TurnRequests(lambda: self.state, self.calls.side_model("compaction"),
                                     self._emit, max_output_tokens, context_window)
        self.redactor = redactor or Redactor.from_environment()
        self.context = context
        self.state = SessionState()
        # Explorers and parallel reads emit from worker threads: one append at a time.
        self._lock = threading.RLock()
        # With `[roles] enabled`: planner, coder and reviewer take turns on the plan.
        self.conductor = self._roles(roles, max_output_tokens)
        # True while this run continues an earlier one and its model has not answered yet:
        # a failure then (a wrong endpoint, a refused key) leaves the session resumable.
        self.unanswered_resume = False

    def _current_plan(self) -> Plan | None:
        return self.state.plan

    def _roles(self, roles: RolesSettings | None, max_output_tokens: int) -> Conductor | None:
        if roles is None or not roles.enabled:
            return None
        conductor = Conductor(roles, self.budgets, self.ctx, self._emit, self._finish)
        self.calls.phase = conductor.phase
        self.ctx.services[REVIEW_STATE] = lambda: self.state.roles
        self.ctx.services[EXPLORERS] = Explorers(
            self.calls.side, self.registry, self.ctx, self._emit, lambda: self.state, roles,
            self.budgets, self.policy, self.redactor, max_output_tokens)
        return conductor

    # --- the log ---------------------------------------------------------------------------

    def _emit(self, *raw: Event) -> None:
        events = [redact_event(e, self.redactor) for e in raw]
        with self._lock, self.control.critical():
            # At the seqs after the folded log: a replayed append (a worker lost after the
            # commit) is skipped, and a second writer's append conflicts, never interleaves.
            after = self.state.last_seq if self.state.started is not None else None
            seq = self.store.append(self.session_id, events, after_seq=after)
            first = seq - len(events) + 1
            for n, event in enumerate(events):
                stored = StoredEvent(session_id=self.session_id, seq=first + n, event=event)
                apply(self.state, stored)
                if self.on_event is not None:
                    self.on_event(stored)

    def _emit_one(self, event: Event) -> None:
        self._emit(event)
        if not isinstance(event, FileEdited):
            return
        index = self.ctx.services.get("index")
        warmup = self.ctx.services.get(WARMUP_SERVICE)
        if not isinstance(index, RepoIndex) and isinstance(warmup, IndexWarmup):
            # Open but not finished (its sweep or hand-over still under way): the sweep
            # keeps what is reported meanwhile, and would not see a file added after its walk.
            index = warmup.wait(0)
        if isinstance(index, RepoIndex):
            # A new or renamed file must be searchable at once, not after the next sweep.
            index.notify_changed([event.path])

    def _finish(self, status: FinishStatus, summary: str = "", reason: str = "") -> None:
        self._emit(SessionFinished(status=status, summary=summary, reason=reason))

    # --- the loop ----------------------------------------------------------------------------

    def run(self) -> SessionState:
        self.state = fold(self.store.read(self.session_id))
        if self.state.started is None:
            raise ModelError(f"session {self.session_id} has no start event")
        if self.state.is_over:
            return self.state
        if self.policy is not None:
            self.policy.bind_hooks(session_hook_guard(self.state.started, self.ctx.workspace))
        if self.gate is not None:
            self.gate.remember(self.state.approvals.values())
        if self.finish_gate is not None:
            self.finish_gate.restore(self.state)
        if self.state.pending_approvals and self.approver is None:
            # Nobody here can answer: a resume would only be recorded and stop again.
            return self.state
        # Anything after the start event means an earlier run (or a person) was here.
        self.unanswered_resume = self.state.last_seq > 1
        if self.state.steps or self.state.status == "paused":
            self._resume()
        if self.state.finish_summary is not None and not self.state.is_over:
            self._finish("finished", summary=self.state.finish_summary)
        try:
            while not self.state.is_over:
                if self._steer():
                    break
                pending = self.state.unfinished_calls()
                if pending:
                    if not self._run_calls(pending):
                        break
                    continue
                if self._supervise():
                    continue
                if not self._call_model():
                    break
        except KeyboardInterrupt:
            self._emit(SessionPaused(reason="interrupted by the user (Ctrl-C)"))
            raise
        return self.state

    def _resume(self) -> None:
        interrupted = self.state.interrupted_calls()
        self._emit(SessionResumed(pid=os.getpid(), interrupted_calls=[c.id for c in interrupted]))
        for call in interrupted:
            self._emit(ToolCallFinished(
                step=self.state.steps, call_id=call.id, name=call.name, ok=False,
                interrupted=True,
                output=(f"{INTERRUPTED_MARKER} the session stopped while this call ran; its "
                        "effects may be partial. Check the current state and retry if needed."),
            ))

    def _steer(self) -> bool:
        """Honour a stop or pause from a person; True when the loop must end now."""
        if self.control.stop.is_set():
            self._finish("stopped", reason="stopped by the user")
            return True
        if self.control.pause.is_set():
            self._emit(SessionPaused(reason="paused by the user"))
            return True
        return False

    def _supervise(self) -> bool:
        """Budgets and loop detection; True if a note was added (so the loop re-checks)."""
        notes = self.ctx.services.get(STEP_NOTES)
        if notes is not None and (events := notes(self.state)):
            self._emit(*events)
        verdict = check_budgets(self.state, self.budgets)
        if verdict.exceeded is not None:
            use = verdict.exceeded
            self._finish("budget_exceeded",
                         reason=f"{use.budget} budget spent ({use.used:g} of {use.limit:g}); "
                                "the work so far is kept")
            return True
        for use in verdict.warnings:
            self._emit(BudgetWarning(budget=use.budget, used=use.used, limit=use.limit),
                       SystemNote(text=warning_text(use), kind="budget"))
        if self.conductor is not None and self.conductor.supervise(self.state):
            return True
        finding = detect_loop(self.state)
        if finding is None:
            return False
        if self.state.loop_nudges >= 1:
            self._emit(LoopDetected(pattern=finding.pattern, detail=finding.detail,
                                    action="stop"))
            self._finish("stuck", reason=f"loop detected again after a warning: {finding.detail}")
        else:
            self._emit(LoopDetected(pattern=finding.pattern, detail=finding.detail,
                                    action="nudge"),
                       SystemNote(text=finding.nudge_text(), kind="loop"))
        return True

    def _call_model(self) -> bool:
        """One model turn; False when the loop must stop with the session still open."""
        if self.context is not None:
            for built in self.context.events(self.state):
                self._emit(built)
        try:
            request = self.requests.build(self.registry.specs() if self.conductor is None
                                          else self.conductor.specs(self.registry, self.state))
            completion = self.calls.turn(request, self.on_delta, self.requests.shrink)
        except ContextOverflow as exc:
            self._finish("context_overflow", reason=str(exc))
            return True
        except ModelError as exc:
            if self.unanswered_resume and not isinstance(exc, ContextWindowExceeded
                                                         | ScriptExhausted):
                self._emit(SessionPaused(reason=f"{MODEL_SILENT} ({exc.kind}: {exc.message}); "
                                                "the session can be resumed"))
                return False
            if isinstance(exc, ContextWindowExceeded):
                self._finish("context_overflow", reason=exc.message)
            elif isinstance(exc, ScriptExhausted):
                self._finish("error", reason=exc.message)
            else:
                self._finish("error", reason=f"{exc.kind}: {exc.message}")
            return True
        self.unanswered_resume = False
        if not completion.tool_calls:
            what = "an empty reply" if not completion.text.strip() else "a reply without a tool call"
            self._emit(SystemNote(
                kind="no_action",
                text=f"That was {what}. Continue the task by calling a tool, or call finish "
                     "when the task is done.",
            ))
        return True
