"""What every event shares, and the small records events carry."""

from __future__ import annotations

import time
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

SCHEMA_VERSION = 1

# The text a tool result starts with when its call was cut off by a crash or a kill.
INTERRUPTED_MARKER = "[interrupted]"


def now() -> float:
    return time.time()


class EventBase(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)

    v: int = SCHEMA_VERSION
    ts: float = Field(default_factory=now)


class ToolCallData(BaseModel):
    """A tool call as the model asked for it (arguments may be unparsed text)."""

    model_config = ConfigDict(frozen=True)

    id: str
    name: str
    arguments: dict[str, Any] | None = None
    raw_arguments: str = ""


class UsageData(BaseModel):
    model_config = ConfigDict(frozen=True)

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    estimated: bool = False


class InstructionSource(BaseModel):
    """An instruction file put into the system prompt, and how it was treated: the user's
    own is trusted; a repository's is scanned and fenced as data, and `flags` taint."""

    model_config = ConfigDict(frozen=True)

    source: str
    trusted: bool
    flags: list[str] = Field(default_factory=list)
    redacted: int = 0


class HookFileData(BaseModel):
    """A file a configured hook command names, pinned by content when the session started."""

    model_config = ConfigDict(frozen=True)

    path: str
    sha256: str
