"""Turning a provider's raw tool calls into clean `ToolCallData`, whatever the server's quirks."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from functools import cache
from typing import Any

from codeloop.events import ToolCallData, UsageData
from codeloop.llm.types import Message, ModelRequest

RawCall = tuple[str | None, str, str]
# How a Completion's note starts when tool calls were recovered from the answer's text.
TEXT_CALLS_NOTE = "the model wrote"

# A chat format wraps each message in a few tokens of role markup.
_MESSAGE_OVERHEAD = 4


def _strip_fence(text: str) -> str:
    if text.startswith("```") and text.endswith("```") and len(text) >= 6:
        body = text[3:-3]
        first, _, rest = body.partition("\n")
        # The first line of a fence is a language tag only when it is a bare word.
        return (rest if first.strip().isalpha() or not first.strip() else body).strip()
    return text


def _drop_trailing_commas(text: str) -> str:
    """Remove commas that directly precede `}` or `]` outside strings."""
    out: list[str] = []
    in_string = escaped = False
    for n, ch in enumerate(text):
        if in_string:
            escaped = ch == "\\" and not escaped
            if ch == '"' and not escaped:
                in_string = False
            out.append(ch)
            continue
        if ch == '"':
            in_string = True
        elif ch == ",":
            rest = text[n + 1:].lstrip()
            if rest[:1] in ("}", "]"):
                continue
        out.append(ch)
    return "".join(out)


def parse_arguments(raw: str) -> dict[str, Any] | None:
    """Parse JSON arguments, repairing only what has one possible reading; else None."""
    text = raw.strip()
    if text == "":
        # No arguments at all can only mean an empty object (some servers send "" for `{}`).
        return {}
    # A code fence around the object is markup, not content: nothing inside changes meaning.
    text = _strip_fence(text)
    for candidate in (text, _drop_trailing_commas(text)):
        # A trailing comma has no meaning in an object or list, so dropping it cannot change
        # the value the model meant; this is the second try, after the text as sent.
        try:
            value = json.loads(candidate)
        except json.JSONDecodeError:
            continue
        if isinstance(value, str):
            # Double-encoded: the arguments object was sent as a JSON string of JSON. Only a
            # string that itself parses to an object is taken; any other string is refused.
            try:
                value = json.loads(value)
            except json.JSONDecodeError:
                return None
        return value if isinstance(value, dict) else None
    # Anything else (truncated objects, single quotes, comments, prose around the JSON) has
    # more than one plausible reading: the loop answers the model with a format error.
    return None


def normalise(raw_calls: Sequence[RawCall]) -> list[ToolCallData]:
    """Give every call a unique id (servers omit or reuse them) and parsed arguments."""
    seen: set[str] = set()
    out = []
    for n, (call_id, name, raw_args) in enumerate(raw_calls):
        cid = call_id or f"call_{n}"
        while cid in seen:
            cid = f"{cid}_{n}"
        seen.add(cid)
        out.append(ToolCallData(id=cid, name=name.strip(), arguments=parse_arguments(raw_args),
                                raw_arguments=raw_args))
    return out


# --- tool calls written as text --------------------------------------------------------------

_TAGGED = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.DOTALL)
_FENCED = re.compile(r"```(?:json|tool_call|tool)?[ \t]*\n(.*?)\n?```", re.DOTALL)


def _call_from_json(text: str, tools: set[str]) -> RawCall | None:
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return None
    if not isinstance(value, dict):
        return None
    name = value.get("name", value.get("tool"))
    if not isinstance(name, str) or name not in tools:
        return None
    args = value.get("arguments", value.get("parameters", {}))
    raw = args if isinstance(args, str) else json.dumps(args)
    return None, name, raw


def calls_in_text(text: str, tool_names: Sequence[str]) -> list[RawCall]:
    """Tool calls a model wrote into its content (`<tool_call>` tags or fenced JSON).

    Only JSON naming one of the request's tools counts, so code a model quotes is left alone.
    """
    tools = set(tool_names)
    if not tools or not text:
        return []
    for pattern in (_TAGGED, _FENCED):
        found = [c for m in pattern.finditer(text)
                 if (c := _call_from_json(m.group(1).strip(), tools)) is not None]
        if found:
            return found
    whole = _call_from_json(text.strip(), tools)
    return [whole] if whole is not None else []


# --- usage when the server sends none ---------------------------------------------------------


@cache
def _encoding() -> Any:
    try:
        import quicktok
    except ImportError:
        return None
    from codeloop.context.tokens import DEFAULT_ENCODING

    # The encoding the context budget counts with: a session has it loaded already, and a
    # second one (o200k) would cost each process most of a second and ~80 MB more.
    return quicktok.get_encoding(DEFAULT_ENCODING)


def estimate_tokens(text: str) -> int:
    """Tokens in `text` with the cl100k encoding bundled in quicktok; chars/4 without it.

    An estimate of the server's own count: its model's tokenizer may differ.
    """
    if not text:
        return 0
    enc = _encoding()
    return int(enc.count(text)) if enc is not None else max(1, (len(text) + 3) // 4)


def _message_tokens(m: Message) -> int:
    total = _MESSAGE_OVERHEAD + estimate_tokens(m.content)
    for c in m.tool_calls:
        total += estimate_tokens(c.name) + estimate_tokens(c.raw_arguments or json.dumps(c.arguments))
    return total


def estimate_usage(request: ModelRequest, text: str, raw_calls: Sequence[RawCall]) -> UsageData:
    """Counted locally (the server sent no usage), so marked `estimated`."""
    prompt = sum(_message_tokens(m) for m in request.messages)
    prompt += sum(estimate_tokens(json.dumps(t.parameters)) + estimate_tokens(t.description)
                  for t in request.tools)
    output = estimate_tokens(text) + sum(estimate_tokens(n) + estimate_tokens(a) for _, n, a in raw_calls)
    return UsageData(input_tokens=prompt, output_tokens=output, estimated=True)
