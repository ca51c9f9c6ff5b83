"""The request for the loop's next turn: the conversation compacted to fit the context window.

Compaction is recorded as a `Compacted` event; its summary comes from the summariser (the
small model, through the router). When a provider finds a request too long all the same,
`shrink` compacts it to the window the provider named and keeps that window for the run.
"""

from __future__ import annotations

from collections.abc import Callable

from codeloop.context.assemble import tools_tokens
from codeloop.context.compaction import ContextOverflow, compact
from codeloop.context.messages import (
    build_messages,
    conversation,
    fixed_head,
    plan_message,
    task_message,
)
from codeloop.context.tokens import get_counter, messages_tokens
from codeloop.events import Compacted, Event, SessionStarted
from codeloop.llm.types import ContextWindowExceeded, Message, Model, ModelRequest, ToolSpec
from codeloop.planner.render import render_plan
from codeloop.session.state import SessionState

_MIN_OUTPUT = 256


class TurnRequests:
    """Builds each turn's `ModelRequest` from the session's state."""

    def __init__(self, state: Callable[[], SessionState], summariser: Model,
                 emit: Callable[[Event], None], max_output_tokens: int = 8192,
                 context_window: int | None = None) -> None:
        self.state = state
        self.summariser = summariser
        self.emit = emit
        self.max_output_tokens = max_output_tokens
        self.context_window = context_window

    def build(self, tools: list[ToolSpec]) -> ModelRequest:
        """The next turn's request; `ContextOverflow` when even compaction cannot fit it."""
        state = self.state()
        started = state.started
        assert started is not None
        body = self._fit(started, tools)
        messages = build_messages(started, state.transcript, body, self.plan_text())
        return ModelRequest(messages=messages, tools=tools, max_tokens=self.max_output_tokens,
                            step=state.steps)

    def shrink(self, sent: ModelRequest, exc: ContextWindowExceeded) -> ModelRequest | None:
        """After a provider found `sent` too long: compacted to the window it named (at most
        three quarters of what was sent), kept for the rest of this run, with at most a quarter
        of it kept for the output; None if no smaller."""
        counter = get_counter()
        sent_tokens = messages_tokens(sent.messages, counter)
        whole = sent_tokens + tools_tokens(sent.tools, counter) + self.max_output_tokens
        window = min(exc.limit or whole, whole * 3 // 4)
        self.context_window = min(self.context_window or window, window)
        # The output reserved within a window the provider named smaller than configured
        # (8K of output in an 8K window would leave no room to compact into).
        self.max_output_tokens = min(self.max_output_tokens, max(_MIN_OUTPUT, window // 4))
        try:
            smaller = self.build(sent.tools)
        except ContextOverflow:
            return None
        return smaller if messages_tokens(smaller.messages, counter) < sent_tokens else None

    def plan_text(self) -> str | None:
        """The plan section: the steps of the plan being worked; progress is in the
        conversation, so updates do not change this cached prefix."""
        plan = self.state().plan
        return render_plan(plan, progress=False) if plan is not None else None

    def _fit(self, started: SessionStarted, tools: list[ToolSpec]) -> list[Message]:
        """The conversation within the context window: old outputs shortened, and older turns
        summarised (recorded as a `Compacted` event) when that is not enough."""
        body = conversation(self.state().transcript)
        if self.context_window is None:
            return body
        counter = get_counter()
        # The system prompt, the repo map and the plan are in every request.
        plan = plan_message(self.plan_text())
        fixed = (messages_tokens(fixed_head(started) + ([plan] if plan else []), counter)
                 + tools_tokens(tools, counter) + self.max_output_tokens)
        budget = int(self.context_window * 0.95) - fixed
        result = compact([task_message(started), *body], budget, self.summariser, counter)
        if result.dropped_messages:
            summary = result.messages[1]
            self.emit(Compacted(dropped_events=result.dropped_messages, summary=summary.content,
                                tokens_before=result.tokens_before,
                                tokens_after=result.tokens_after))
        return result.messages[1:]
