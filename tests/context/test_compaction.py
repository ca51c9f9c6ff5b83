from __future__ import annotations

import pytest

from codeloop.context.compaction import (
    SUMMARY_PREFIX,
    ContextOverflow,
    compact,
)
from codeloop.context.tokens import get_counter, messages_tokens
from codeloop.events import ToolCallData
from codeloop.llm.types import Completion, DeltaCallback, Message, ModelRequest

TASK = "Fix the rounding bug in shop/pricing.py apply_discount"
PLAN = "# Plan\n1. find apply_discount\n2. fix rounding\n3. run tests"


class Summariser:
    """A tiny real `Model`: it answers every request with a fixed structured summary."""

    name = "test-summariser"

    def __init__(self) -> None:
        self.requests: list[ModelRequest] = []

    def complete(self, request: ModelRequest, on_delta: DeltaCallback | None = None
                 ) -> Completion:
        self.requests.append(request)
        return Completion(text="## Progress\nread pricing.py\n## Next steps\nrun tests")


def call(i: int, name: str, **arguments: str) -> Message:
    return Message("assistant", f"step {i}",
                   tool_calls=[ToolCallData(id=f"c{i}", name=name, arguments=arguments)])


def result(i: int, text: str) -> Message:
    return Message("tool", text, tool_call_id=f"c{i}")


def history(turns: int = 30) -> list[Message]:
    big = "\n".join(f"line {n}: some long grep output about pricing" for n in range(200))
    msgs = [Message("system", "You are codeloop."), Message("user", TASK),
            Message("user", PLAN, name="plan")]
    for i in range(turns):
        if i % 10 == 3:
            msgs += [call(i, "edit_file", path=f"shop/f{i}.py"), result(i, f"edited shop/f{i}.py: 1 hunk")]
        else:
            msgs += [call(i, "grep", pattern="discount"), result(i, big)]
    return msgs


def test_under_budget_is_unchanged() -> None:
    msgs = history(2)
    out = compact(msgs, 1_000_000)
    assert out.messages == msgs and not out.compacted


def test_shortening_old_outputs_first() -> None:
    msgs = history(6)
    counter = get_counter()
    before = messages_tokens(msgs, counter)
    out = compact(msgs, before - 2_000, summariser=None)
    assert out.shortened_outputs > 0 and out.dropped_messages == 0
    assert "run the tool again to see them" in out.messages[4].content
    assert out.messages[-1].content == msgs[-1].content  # recent turns stay whole


def test_summary_keeps_task_plan_and_every_edit() -> None:
    msgs = history(30)
    summariser = Summariser()
    out = compact(msgs, 8_000, summariser=summariser)
    contents = [m.content for m in out.messages]
    assert out.messages[0].role == "system"
    assert contents[1] == TASK and contents[2] == PLAN
    summary = next(m for m in out.messages if m.name == "summary")
    assert summary.content.startswith(SUMMARY_PREFIX)
    edited = [f"shop/f{i}.py" for i in range(30) if i % 10 == 3]
    for path in edited:
        assert path in "\n".join(contents)
    assert out.edits_kept and all("edit_file" in e for e in out.edits_kept)
    assert out.tokens_after <= 8_000 < out.tokens_before
    assert len(summariser.requests) == 1
    event = out.event()
    assert event.dropped_events == out.dropped_messages > 0
    assert "## Progress" in event.summary
    # No tool result is left without the assistant message that called it.
    ids = {c.id for m in out.messages for c in m.tool_calls}
    assert all(m.tool_call_id in ids for m in out.messages if m.role == "tool")


def test_overflow_is_a_clear_error_not_a_silent_cut() -> None:
    msgs = history(30)
    with pytest.raises(ContextOverflow, match="budget is 50"):
        compact(msgs, 50, summariser=Summariser())
    with pytest.raises(ContextOverflow, match="no summariser"):
        compact(msgs, 4_000, summariser=None)
