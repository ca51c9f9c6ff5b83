"""The log as ACP updates, the prompt's blocks as a task, and a follow-up reopening a session."""

from __future__ import annotations

from pathlib import Path

from acp import text_block
from acp.schema import EmbeddedResourceContentBlock, ResourceContentBlock, TextResourceContents

from codeloop.editor.agent import prompt_text
from codeloop.editor.updates import UpdateMapper
from codeloop.events import (
    ModelCallFinished,
    PlanProposed,
    PlanStep,
    PlanStepChange,
    PlanUpdated,
    SessionFinished,
    SessionStarted,
    StoredEvent,
    ToolCallData,
    ToolCallFinished,
    ToolCallStarted,
    UserMessage,
)
from codeloop.llm.types import StreamDelta
from codeloop.session.state import fold


def stored(seq: int, event: object) -> StoredEvent:
    return StoredEvent("s1", seq, event)  # type: ignore[arg-type]


def test_tool_calls_plan_and_text_map_to_updates(tmp_path: Path) -> None:
    mapper = UpdateMapper(tmp_path)
    mapper.on_event(stored(1, SessionStarted(task="t", repo=str(tmp_path), model="m")))
    call = ToolCallData(id="c1", name="run", arguments={"command": "pytest -q\x1b[2J"})
    (start,) = mapper.on_event(stored(2, ToolCallStarted(step=1, call=call)))
    assert (start.session_update, start.kind, start.status) == ("tool_call", "execute",
                                                                "in_progress")
    assert "\x1b" not in start.title and start.title.startswith("run pytest -q")
    (done,) = mapper.on_event(stored(3, ToolCallFinished(step=1, call_id="c1", name="run",
                                                         ok=False, output="boom\x07")))
    assert done.status == "failed" and done.content[0].content.text == "boom"
    (plan,) = mapper.on_event(stored(4, PlanProposed(call_id="p", summary="s", steps=[
        PlanStep(id="a", title="first"), PlanStep(id="b", title="second")])))
    assert [(e.content, e.status) for e in plan.entries] == [("first", "pending"),
                                                            ("second", "pending")]
    (plan,) = mapper.on_event(stored(5, PlanUpdated(changes=[
        PlanStepChange(id="a", status="done")])))
    assert [e.status for e in plan.entries] == ["completed", "pending"]
    # Streamed text is not sent twice when the call finishes.
    assert mapper.on_delta(StreamDelta(text="hello ")) != []
    after = mapper.on_event(stored(6, ModelCallFinished(step=2, model="m", text="hello")))
    assert [u.content.text for u in after] == ["\n\n"]
    (end,) = mapper.on_event(stored(7, SessionFinished(status="finished", summary="done")))
    assert "done" in end.content.text and "codeloop apply s1" in end.content.text


def test_prompt_blocks_become_the_task() -> None:
    blocks = [text_block("Fix it"),
              EmbeddedResourceContentBlock(type="resource", resource=TextResourceContents(
                  uri="file:///r/a.py", text="x = 1")),
              ResourceContentBlock(type="resource_link", uri="file:///r/b.py", name="b.py")]
    text = prompt_text(blocks)
    assert text.startswith("Fix it\n\nAttached file:///r/a.py:\n```\nx = 1\n```")
    assert text.endswith("(see file:///r/b.py)")


def test_a_follow_up_reopens_a_finished_session() -> None:
    events = [SessionStarted(task="t", repo="/r", model="m"),
              SessionFinished(status="finished", summary="done")]
    assert fold(events).is_over
    assert fold([*events, UserMessage(text="more")]).is_over
    reopened = fold([*events, UserMessage(text="more", reopens=True)])
    assert not reopened.is_over and reopened.status == "running"
