"""The text-mode tool protocol: the prompt it writes, the parser's errors, the history as text."""

from __future__ import annotations

import pytest

from codeloop.events import ToolCallData
from codeloop.llm.textmode import (
    FORMAT_ERROR_TOOL,
    ActionError,
    TextModeModel,
    describe_tools,
    parse_action,
    to_text_messages,
)
from codeloop.llm.types import Completion, DeltaCallback, Message, ModelRequest, ToolSpec

TOOLS = [ToolSpec("edit_file", "Replace text in a file.\nMore detail.", {
    "type": "object", "required": ["path", "old"],
    "properties": {"path": {"type": "string"}, "old": {"type": "string"},
                   "tags": {"type": "array", "items": {"type": "string"}},
                   "mode": {"enum": ["a", "b"]}}})]


def test_listing_is_compact_and_marks_required_arguments() -> None:
    text = describe_tools(TOOLS)
    assert ('- edit_file(path*: string, old*: string, tags: list[string], mode: "a"|"b"): '
            "Replace text in a file.") in text
    assert "More detail" not in text


def test_one_fenced_action_parses() -> None:
    reply = 'I will edit.\n```json\n{"tool": "edit_file", "arguments": {"path": "a"}}\n```'
    assert parse_action(reply) == ("edit_file", {"path": "a"},
                                   '{"tool": "edit_file", "arguments": {"path": "a"}}')


@pytest.mark.parametrize(("reply", "message"), [
    ("I think the bug is in a.py", "no fenced JSON action found"),
    ('```json\n{"tool": "a"}\n```\n```json\n{"tool": "b"}\n```', "found 2 fenced JSON blocks"),
    ('```json\n{"tool": "a", "arguments": {"x": 1,,}}\n```',
     "not valid JSON: Expecting property name enclosed in double quotes at line 1 column 36"),
    ('```json\n{"arguments": {}}\n```', 'no "tool" key'),
    ('```json\n["edit_file"]\n```', "must be a JSON object"),
    ('```json\n{"tool": "a", "arguments": "x"}\n```', '"arguments" of a must be a JSON object'),
])
def test_format_errors_are_precise(reply: str, message: str) -> None:
    result = parse_action(reply)
    assert isinstance(result, ActionError) and message in result.message


def test_a_bare_fence_with_a_command_is_not_an_action() -> None:
    result = parse_action("Run this:\n```\npython3 -m pytest\n```")
    assert isinstance(result, ActionError) and "no fenced JSON action" in result.message


def test_code_blocks_in_other_languages_are_not_actions() -> None:
    reply = ('```python\nprint(1)\n```\n```json\n{"tool": "run", "arguments": '
             '{"command": "pytest"}}\n```')
    parsed = parse_action(reply)
    assert not isinstance(parsed, ActionError) and parsed[:2] == ("run", {"command": "pytest"})


def test_history_becomes_alternating_text() -> None:
    call = ToolCallData(id="c1", name="edit_file", arguments={"path": "a"})
    messages = [Message("system", "You code."), Message("user", "fix a"),
                Message("assistant", "", tool_calls=[call]),
                Message("tool", "edited a", tool_call_id="c1"),
                Message("user", "[codeloop] 3 steps left")]
    out = to_text_messages(messages, TOOLS)
    assert [m.role for m in out] == ["system", "user", "assistant", "user"]
    assert out[0].content.startswith("You code.") and "edit_file(" in out[0].content
    assert '"tool": "edit_file"' in out[2].content
    assert out[3].content == "Result of edit_file:\nedited a\n\n[codeloop] 3 steps left"
    assert all(not m.tool_calls for m in out)


def test_a_format_error_is_not_put_in_the_models_mouth() -> None:
    bad = ToolCallData(id="t1", name=FORMAT_ERROR_TOOL, raw_arguments="format error: no block")
    out = to_text_messages([Message("user", "fix a"),
                            Message("assistant", "I will look around.", tool_calls=[bad]),
                            Message("tool", "no fenced JSON action found", tool_call_id="t1")],
                           TOOLS)
    assert out[2].content == "I will look around."
    assert out[3].content == "Your reply was not a valid action.\nno fenced JSON action found"


class Echo:
    """A model whose reply is fixed; records the request (no server needed for this unit)."""

    name = "echo"

    def __init__(self, text: str) -> None:
        self.text = text
        self.seen: list[ModelRequest] = []

    def complete(self, request: ModelRequest, on_delta: DeltaCallback | None = None) -> Completion:
        self.seen.append(request)
        return Completion(text=self.text)


def test_wrapper_turns_replies_into_calls_and_errors_into_a_format_error_call() -> None:
    good = Echo('```json\n{"tool": "edit_file", "arguments": {"path": "a"}}\n```')
    model = TextModeModel(good, reason="tool_protocol = text in the settings")
    out = model.complete(ModelRequest(messages=[Message("user", "go")], tools=TOOLS))
    assert [(c.name, c.arguments) for c in out.tool_calls] == [("edit_file", {"path": "a"})]
    assert good.seen[0].tools == [] and good.seen[0].messages[0].role == "system"
    assert out.notes == ["tool protocol: text (tool_protocol = text in the settings)"]
    again = model.complete(ModelRequest(messages=[Message("user", "go")], tools=TOOLS))
    assert again.notes == [] and again.tool_calls[0].id != out.tool_calls[0].id

    bad = TextModeModel(Echo("no action here"))
    call = bad.complete(ModelRequest(messages=[Message("user", "go")], tools=TOOLS)).tool_calls[0]
    assert call.name == FORMAT_ERROR_TOOL and call.arguments is None
    assert call.raw_arguments.startswith("format error: no fenced JSON action")


def test_requests_without_tools_pass_through() -> None:
    inner = Echo("hi")
    out = TextModeModel(inner).complete(ModelRequest(messages=[Message("user", "hi")]))
    assert out.text == "hi" and out.tool_calls == [] and inner.seen[0].messages[0].role == "user"
