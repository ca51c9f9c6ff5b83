"""A model without native tool calling, through the loop: actions parsed, format errors precise,
and the protocol choice recorded in the log."""

from __future__ import annotations

from pathlib import Path

from codeloop.llm.scripted import ScriptedModel, Turn
from codeloop.llm.textmode import TextModeModel
from tests.session.helpers import make_repo, new_session

ACTION = '```json\n{"tool": "read_file", "arguments": {"path": "calc.py"}}\n```'
FINISH = '```json\n{"tool": "finish", "arguments": {"summary": "read it"}}\n```'


def test_text_actions_and_format_errors(tmp_path: Path) -> None:
    inner = ScriptedModel([Turn(text="I will just talk."), Turn(text=ACTION), Turn(text=FINISH)])
    model = TextModeModel(inner, reason="configured")
    repo = make_repo(tmp_path)
    store, runner = new_session(tmp_path, repo, model)
    state = runner.run()
    assert state.status == "finished"
    events = [e.event for e in store.read(runner.session_id)]
    results = [e for e in events if e.type == "tool_call_finished"]
    assert "no fenced JSON action" in (results[0].error or "")  # type: ignore[union-attr]
    assert results[0].data.get("malformed")  # type: ignore[union-attr]
    assert results[1].ok and "return a - b" in results[1].output  # type: ignore[union-attr]
    notes = [n for e in events if e.type == "model_call_finished" for n in e.notes]  # type: ignore[union-attr]
    assert "tool protocol: text (configured)" in notes
