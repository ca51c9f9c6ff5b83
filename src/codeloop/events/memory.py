"""Events of long-term memory: what a session recalled and what its model stored."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from codeloop.events.base import EventBase


class MemoryRecalled(EventBase):
    """Memories put in front of the model: at the start (by the task, into the system
    prompt), for a plan step (a note), or by the `recall` tool; the web view lists them."""

    type: Literal["memory_recalled"] = "memory_recalled"
    ids: list[str] = Field(default_factory=list)
    trigger: Literal["task", "step", "tool"] = "task"
    query: str = ""
    tokens: int = 0


class MemoryStored(EventBase):
    """A memory the model stored with the `remember` tool (captures from the log, such as a
    person's denial with its reason, carry their session and event in the store instead)."""

    type: Literal["memory_stored"] = "memory_stored"
    id: str
    kind: str
    scope: str
    source: str
