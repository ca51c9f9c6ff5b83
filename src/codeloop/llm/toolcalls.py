"""Turning a provider's raw tool calls into clean `ToolCallData`, whatever the server's quirks."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from codeloop.events import ToolCallData, UsageData
from codeloop.llm.types import ModelRequest

RawCall = tuple[str | None, str, str]


def parse_arguments(raw: str) -> dict[str, Any] | None:
    """Parse JSON arguments; repair only what is unambiguous (empty text, a code fence)."""
    text = raw.strip()
    if text == "":
        return {}
    if text.startswith("```") and text.endswith("```"):
        text = text.strip("`").removeprefix("json").strip()
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


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


def estimate_tokens(text: str) -> int:
    # About four characters a token for English and code; used only when a server sends no usage.
    return max(1, len(text) // 4) if text else 0


def estimate_usage(request: ModelRequest, text: str, raw_calls: Sequence[RawCall]) -> UsageData:
    prompt = sum(estimate_tokens(m.content) for m in request.messages)
    output = estimate_tokens(text) + sum(estimate_tokens(a) for _, _, a in raw_calls)
    return UsageData(input_tokens=prompt, output_tokens=output, estimated=True)
