"""Tool calling for models without it: tools described in the prompt, one fenced JSON action back."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from typing import Any

from codeloop.events import ToolCallData
from codeloop.llm.toolcalls import TEXT_CALLS_NOTE
from codeloop.llm.types import (
    Completion,
    DeltaCallback,
    Message,
    Model,
    ModelError,
    ModelRequest,
    ToolSpec,
)

# The name of the call that carries a format error back to the loop. The registry answers it
# with the error text (`raw_arguments`) and marks it malformed, so loop detection counts it.
FORMAT_ERROR_TOOL = "format_error"

_FENCE = re.compile(r"```([A-Za-z_]*)[ \t]*\n(.*?)```", re.DOTALL)

_INSTRUCTIONS = """\
# Tools
You act by calling exactly one tool per reply. Write the call as one fenced JSON block:

```json
{{"tool": "TOOL_NAME", "arguments": {{...}}}}
```

You may think in a sentence or two before the block; write nothing after it. The result
comes back in the next message. Available tools (arguments as `name: type`, * = required):
{listing}"""


def _describe_type(schema: dict[str, Any]) -> str:
    kind = schema.get("type", "any")
    if kind == "array":
        return f"list[{_describe_type(schema.get('items', {}))}]"
    if "enum" in schema:
        return "|".join(json.dumps(v) for v in schema["enum"])
    return str(kind)


def describe_tools(tools: list[ToolSpec]) -> str:
    """A compact listing: one line per tool, its arguments and their types."""
    lines = []
    for tool in tools:
        props: dict[str, Any] = tool.parameters.get("properties", {})
        required = set(tool.parameters.get("required", []))
        args = ", ".join(f"{name}{'*' if name in required else ''}: {_describe_type(schema)}"
                         for name, schema in props.items())
        summary = tool.description.strip().split("\n")[0]
        lines.append(f"- {tool.name}({args}): {summary}")
    return _INSTRUCTIONS.format(listing="\n".join(lines))


@dataclass(frozen=True)
class ActionError:
    """Why a reply is not a valid action, phrased for the model."""

    message: str


def parse_action(text: str) -> tuple[str, dict[str, Any], str] | ActionError:
    """(tool, arguments, raw JSON) from a reply holding one fenced JSON action."""
    # A ```json block is an action attempt; an untagged one only when it holds an object
    # (models often quote shell commands in bare fences).
    blocks = [body.strip() for lang, body in _FENCE.findall(text)
              if lang.lower() == "json" or (lang == "" and body.strip().startswith("{"))]
    if not blocks:
        stripped = text.strip()
        if not stripped.startswith("{"):
            return ActionError('no fenced JSON action found; end your reply with one block: '
                               '```json\n{"tool": "NAME", "arguments": {...}}\n```')
        blocks = [stripped]
    if len(blocks) > 1:
        return ActionError(f"found {len(blocks)} fenced JSON blocks; send exactly one action "
                           "per reply")
    raw = blocks[0]
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        return ActionError(f"the action is not valid JSON: {exc.msg} at line {exc.lineno} "
                           f"column {exc.colno} (character {exc.pos})")
    if not isinstance(value, dict):
        return ActionError("the action must be a JSON object with keys \"tool\" and "
                           "\"arguments\"")
    tool = value.get("tool", value.get("name"))
    if not isinstance(tool, str) or not tool:
        return ActionError('the action has no "tool" key naming the tool to call')
    args = value.get("arguments", {})
    if not isinstance(args, dict):
        return ActionError(f'"arguments" of {tool} must be a JSON object, got '
                           f"{type(args).__name__}")
    return tool, args, raw


def _action_text(call: ToolCallData) -> str:
    args = call.arguments if call.arguments is not None else call.raw_arguments
    return "```json\n" + json.dumps({"tool": call.name, "arguments": args}) + "\n```"


def to_text_messages(messages: list[Message], tools: list[ToolSpec]) -> list[Message]:
    """The history with tool calls and results as plain text, tools in the system prompt."""
    listing = describe_tools(tools)
    names: dict[str, str] = {}
    out: list[Message] = []
    for m in messages:
        if m.role == "system":
            out.append(replace(m, content=f"{m.content}\n\n{listing}".strip()))
            continue
        if m.role == "assistant":
            for c in m.tool_calls:
                names[c.id] = c.name
            # The model's own words already hold its action; only a bare native call is
            # rendered, and a format error was never the model's to show it.
            calls = [c for c in m.tool_calls if c.name != FORMAT_ERROR_TOOL]
            content = m.content if "```" in m.content or not calls else "\n".join(
                [m.content, *(_action_text(c) for c in calls)]).strip()
            msg = Message("assistant", content)
        elif m.role == "tool":
            name = names.get(m.tool_call_id or "", "the tool")
            head = ("Your reply was not a valid action." if name == FORMAT_ERROR_TOOL
                    else f"Result of {name}:")
            msg = Message("user", f"{head}\n{m.content}")
        else:
            msg = Message(m.role, m.content, cache_breakpoint=m.cache_breakpoint)
        # Chat templates of small models expect alternating roles: merge neighbours.
        if out and out[-1].role == msg.role and msg.role != "system":
            out[-1] = replace(out[-1], content=f"{out[-1].content}\n\n{msg.content}")
        else:
            out.append(msg)
    if not out or out[0].role != "system":
        out.insert(0, Message("system", listing))
    return out


class TextModeModel:
    """Wraps any Model: tools go into the prompt and the reply's fenced action becomes a call."""

    tool_protocol = "text"

    def __init__(self, inner: Model, reason: str | None = None) -> None:
        self.inner = inner
        self.name = inner.name
        self._calls = 0
        # Said once, in the first completion's notes, so the session log records the choice.
        self._pending_note = f"tool protocol: text ({reason})" if reason else None

    def complete(self, request: ModelRequest, on_delta: DeltaCallback | None = None) -> Completion:
        if not request.tools:
            return self.inner.complete(request, on_delta)
        inner_request = replace(request, messages=to_text_messages(request.messages,
                                                                   request.tools), tools=[])
        completion = self.inner.complete(inner_request, on_delta)
        self._calls += 1
        call_id = f"text_{self._calls}"
        parsed = parse_action(completion.text)
        if isinstance(parsed, ActionError):
            call = ToolCallData(id=call_id, name=FORMAT_ERROR_TOOL, arguments=None,
                                raw_arguments=f"format error: {parsed.message}")
        else:
            tool, args, raw = parsed
            call = ToolCallData(id=call_id, name=tool, arguments=args, raw_arguments=raw)
        notes = list(completion.notes)
        if self._pending_note is not None:
            notes.insert(0, self._pending_note)
            self._pending_note = None
        return replace(completion, tool_calls=[call], notes=notes)


def _refuses_tools(exc: ModelError) -> bool:
    # A plain ModelError is a rejected request (HTTP 400/422); typed subclasses (auth,
    # context, rate limits, outages) say nothing about tool support.
    return type(exc) is ModelError


class AutoProtocolModel:
    """Native tool calls while the server and model handle them, else the text protocol.

    Decided on the first request with tools, at no extra cost when it answers with a native
    call; only an answer without any call triggers one tiny probe request.
    """

    def __init__(self, inner: Model) -> None:
        self.inner = inner
        self.name = inner.name
        self.tool_protocol: str | None = None
        self._text = TextModeModel(inner)

    def probe(self) -> tuple[str, str]:
        """Ask for one tiny native tool call; (protocol, reason)."""
        request = ModelRequest(
            messages=[Message("system", "You call tools when asked."),
                      Message("user", 'Call the tool `ping` with {"value": 1}.')],
            tools=[ToolSpec("ping", "Answer a ping.", {
                "type": "object", "properties": {"value": {"type": "integer"}},
                "required": ["value"]})],
            max_tokens=64, temperature=0.0, stream=False)
        try:
            reply = self.inner.complete(request)
        except ModelError as exc:
            if not _refuses_tools(exc):
                raise
            return "text", f"the server refused a request with tools ({exc.message})"
        if any(n.startswith(TEXT_CALLS_NOTE) for n in reply.notes):
            return "text", "the model wrote its probe tool call as text"
        if reply.tool_calls:
            return "native", "the model answered a probe with a native tool call"
        if not isinstance(parse_action(reply.text), ActionError):
            return "text", "the model answered the probe with an action in text"
        return "text", "the model did not call a probe tool natively"

    def _decide(self, request: ModelRequest, on_delta: DeltaCallback | None
                ) -> tuple[Completion | None, str]:
        """The first answer (None if it must be redone in text mode) and the reason."""
        try:
            first = self.inner.complete(request, on_delta)
        except ModelError as exc:
            if not _refuses_tools(exc):
                raise
            self.tool_protocol = "text"
            return None, f"the server refused a request with tools ({exc.message})"
        if any(n.startswith(TEXT_CALLS_NOTE) for n in first.notes):
            self.tool_protocol = "text"
            return first, "the model writes its tool calls as text"
        if first.tool_calls:
            self.tool_protocol = "native"
            return first, "the model answered with a native tool call"
        self.tool_protocol, reason = self.probe()
        return (first if self.tool_protocol == "native" else None), reason

    def complete(self, request: ModelRequest, on_delta: DeltaCallback | None = None) -> Completion:
        if not request.tools:
            return self.inner.complete(request, on_delta)
        if self.tool_protocol is None:
            completion, reason = self._decide(request, on_delta)
            if completion is None:
                completion = self._text.complete(request, on_delta)
            completion.notes.insert(0, f"tool protocol: {self.tool_protocol} ({reason})")
            return completion
        model = self.inner if self.tool_protocol == "native" else self._text
        return model.complete(request, on_delta)
