"""Events about the code context put in front of the model: what was chosen, and why."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from codeloop.events.base import EventBase


class ContextSpan(BaseModel):
    """A piece of a file the context shows: an outline (the file's signatures) or lines."""

    model_config = ConfigDict(frozen=True)

    path: str
    kind: Literal["outline", "snippet"] = "snippet"
    start_line: int = 0
    end_line: int = 0
    tokens: int = 0


class ContextBuilt(EventBase):
    """Code from the index put into the conversation: the task context on the first turn
    it is ready for, then refreshes from what the model read and edited. `text` is what
    the model was shown; the rest says what went in and what it cost."""

    type: Literal["context_built"] = "context_built"
    phase: Literal["task", "refresh"] = "task"
    text: str
    # The files the ranker put first, best first (what the map and the snippets came from).
    ranked: list[str] = Field(default_factory=list)
    spans: list[ContextSpan] = Field(default_factory=list)
    # What the focus was built from (a refresh: the files read and edited since the last).
    focus: list[str] = Field(default_factory=list)
    tokens: int = 0
    budget: int = 0
    build_ms: float = 0.0
    # How long after the session's start the index was ready to build from.
    index_ready_s: float = 0.0
    embeddings: bool = False
    untrusted: bool = False
