"""Models that answer from a script: for tests, the demo, and replays of recorded sessions."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codeloop.errors import ConfigError
from codeloop.events import INTERRUPTED_MARKER, ToolCallData, UsageData
from codeloop.llm import types as llm_types
from codeloop.llm.toolcalls import estimate_tokens
from codeloop.llm.types import (
    Completion,
    DeltaCallback,
    Message,
    ModelError,
    ModelRequest,
    ScriptExhausted,
    StreamDelta,
)

_RETRY_PREFIX = "retry_"


@dataclass
class Turn:
    """One scripted answer: text and/or tool calls, or an error to raise."""

    text: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None
    raw: dict[str, Any] | None = None

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Turn:
        return cls(text=data.get("text", ""), tool_calls=list(data.get("tool_calls", [])),
                   error=data.get("error"), raw=data)


def _error(kind: str) -> ModelError:
    classes: dict[str, type[ModelError]] = {
        cls.kind: cls for cls in vars(llm_types).values()
        if isinstance(cls, type) and issubclass(cls, ModelError)
    }
    cls = classes.get(kind, ModelError)
    if cls is llm_types.RateLimited:
        return llm_types.RateLimited("scripted rate limit")
    return cls(f"scripted {kind}")


def _script_position(request: ModelRequest) -> int:
    """Which turn comes next: completed calls so far, not counting retries of interrupted calls.

    The step number, not the visible messages, is the count: compaction hides old turns.
    """
    retries = sum(
        1 for m in request.messages
        if m.role == "assistant" and any(c.id.startswith(_RETRY_PREFIX) for c in m.tool_calls)
    )
    return request.step - retries


def _interrupted_calls(messages: list[Message]) -> list[ToolCallData]:
    """Calls from the last assistant turn whose results say they were interrupted."""
    last = next((i for i in range(len(messages) - 1, -1, -1)
                 if messages[i].role == "assistant"), None)
    if last is None:
        return []
    cut = {m.tool_call_id for m in messages[last + 1:]
           if m.role == "tool" and m.content.startswith(INTERRUPTED_MARKER)}
    return [c for c in messages[last].tool_calls if c.id in cut]


class ScriptedModel:
    """Answers turn by turn from a list; the position comes from the conversation, so a
    resumed session picks up the script where the log left off. An interrupted call is
    re-issued once, as a real model would."""

    def __init__(self, turns: list[Turn], name: str = "scripted", delay_s: float = 0.0) -> None:
        self.name = name
        self.turns = turns
        self.delay_s = delay_s
        self._errors_raised: set[int] = set()

    @classmethod
    def from_file(cls, path: Path) -> ScriptedModel:
        try:
            data = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise ConfigError(f"cannot read the script {path}: {exc}",
                              "a script is a JSON list of turns") from exc
        turns = data["turns"] if isinstance(data, dict) else data
        # {"turns": [...], "delay_s": 0.2} stands in for a model's think time (benchmarks).
        delay = float(data.get("delay_s", 0.0)) if isinstance(data, dict) else 0.0
        return cls([Turn.from_dict(t) for t in turns], name=f"scripted:{path.resolve()}",
                   delay_s=delay)

    def complete(self, request: ModelRequest, on_delta: DeltaCallback | None = None) -> Completion:
        started = time.perf_counter()
        retry = _interrupted_calls(request.messages)
        if retry:
            calls = [ToolCallData(id=f"{_RETRY_PREFIX}{c.id}", name=c.name, arguments=c.arguments,
                                  raw_arguments=c.raw_arguments) for c in retry]
            return self._completion("", calls, request, started)
        position = _script_position(request) + len(self._errors_raised)
        if position >= len(self.turns):
            raise ScriptExhausted(
                f"the script has {len(self.turns)} turns and all were used",
                "add turns to the script or end it with a finish call",
            )
        turn = self.turns[position]
        if turn.error is not None:
            self._errors_raised.add(position)
            raise _error(turn.error)
        if self.delay_s:
            time.sleep(self.delay_s)
        if turn.text and on_delta is not None:
            for word in turn.text.split(" "):
                on_delta(StreamDelta(text=word + " "))
        calls = []
        for n, spec in enumerate(turn.tool_calls):
            raw = spec.get("raw_arguments")
            args = spec.get("arguments")
            calls.append(ToolCallData(
                id=spec.get("id", f"s{position}_{n}"), name=spec["name"],
                arguments=None if raw is not None else (args or {}),
                raw_arguments=raw if raw is not None else json.dumps(args or {}),
            ))
        return self._completion(turn.text, calls, request, started)

    def _completion(self, text: str, calls: list[ToolCallData], request: ModelRequest,
                    started: float) -> Completion:
        prompt = sum(estimate_tokens(m.content) for m in request.messages)
        usage = UsageData(input_tokens=prompt,
                          output_tokens=estimate_tokens(text) + 20 * len(calls), estimated=True)
        return Completion(text=text, tool_calls=calls, usage=usage, model=self.name,
                          latency_ms=(time.perf_counter() - started) * 1000,
                          stop_reason="tool_use" if calls else "end_turn")


def replay_turns(trajectory: dict[str, Any]) -> list[Turn]:
    """The model outputs of an exported session, in order, as a script."""
    turns = []
    for event in trajectory.get("events", []):
        if event.get("type") != "model_call_finished":
            continue
        if event.get("tool_calls") and all(
            c["id"].startswith(_RETRY_PREFIX) for c in event["tool_calls"]
        ):
            # A re-issue after a crash; in a replay the original call completes instead.
            continue
        calls = [
            {"id": c["id"], "name": c["name"], "arguments": c.get("arguments"),
             **({"raw_arguments": c["raw_arguments"]} if c.get("arguments") is None else {})}
            for c in event.get("tool_calls", [])
        ]
        turns.append(Turn(text=event.get("text", ""), tool_calls=calls))
    return turns
