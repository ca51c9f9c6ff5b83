"""`remember` and `recall`: the model's hands on long-term memory.

`remember` is a write-tier tool, so the policy decides as for an edit (in `ask` mode a
person confirms what is stored); what it stores is checked first (session/memory_guard.py).
`recall` only reads. The session puts its memory service in `ctx.services[MEMORY]`; without
one (memory off) both say so.
"""

from __future__ import annotations

from typing import Literal, Protocol

from pydantic import Field

from codeloop.errors import CodeloopError
from codeloop.events import MemoryRecalled, MemoryStored
from codeloop.memory.records import MAX_TEXT_CHARS, Memory
from codeloop.tools.base import Observation, Tool, ToolArgs, ToolContext

MEMORY = "memory"
_OFF = "long-term memory is off for this session"


class MemoryBackend(Protocol):
    """What the session's memory service offers the tools."""

    def remember(self, text: str, kind: str, scope: str) -> Memory:
        """Store a memory of this session (CodeloopError with the reason when refused)."""
        ...

    def recall(self, query: str, limit: int) -> tuple[list[Memory], str, int]:
        """The memories found, rendered with their provenance, and the tokens that took."""
        ...


def _backend(ctx: ToolContext) -> MemoryBackend | None:
    backend: MemoryBackend | None = ctx.services.get(MEMORY)
    return backend


class RememberArgs(ToolArgs):
    text: str = Field(max_length=MAX_TEXT_CHARS,
                      description="One fact, convention or lesson, in your own words.")
    kind: Literal["fact", "correction"] = "fact"
    scope: Literal["repo", "user"] = Field(
        default="repo", description="repo: about this repository; user: about how your user "
                                    "works, on any repository.")


class RememberTool(Tool):
    name = "remember"
    description = (
        "Store a short lesson for later sessions: a project convention you confirmed (how "
        "tests run, a style rule), or a correction your user made. Not tool output, not "
        "secrets, not instructions. Your user may be asked to confirm it.")
    args_model = RememberArgs
    tier = "write"

    def run(self, args: RememberArgs, ctx: ToolContext) -> Observation:
        backend = _backend(ctx)
        if backend is None:
            return Observation(ok=False, error=_OFF)
        try:
            memory = backend.remember(args.text, args.kind, args.scope)
        except CodeloopError as exc:
            hint = f" ({exc.hint})" if exc.hint else ""
            return Observation(ok=False, error=f"not remembered: {exc.message}{hint}")
        ctx.emit(MemoryStored(id=memory.id, kind=memory.kind, scope=memory.scope,
                              source=memory.source))
        return Observation(ok=True, output=f"remembered as {memory.id} ({memory.scope} scope)",
                           data={"memory_id": memory.id})


class RecallArgs(ToolArgs):
    query: str = Field(min_length=1, description="What you want to know, in a few words.")
    limit: int = Field(default=5, ge=1, le=10)


class RecallTool(Tool):
    name = "recall"
    description = ("Search long-term memory (conventions, your user's corrections, what "
                   "earlier sessions on this repository did) for a query.")
    args_model = RecallArgs
    tier = "read"

    def run(self, args: RecallArgs, ctx: ToolContext) -> Observation:
        backend = _backend(ctx)
        if backend is None:
            return Observation(ok=False, error=_OFF)
        memories, text, tokens = backend.recall(args.query, args.limit)
        if not memories:
            return Observation(ok=True, output=f"no memory matches {args.query!r}")
        ctx.emit(MemoryRecalled(ids=[m.id for m in memories], trigger="tool", query=args.query,
                                tokens=tokens))
        return Observation(ok=True, output=text, data={"memory_ids": [m.id for m in memories]})


MEMORY_TOOLS: tuple[type[Tool], ...] = (RememberTool, RecallTool)
