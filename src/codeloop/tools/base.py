"""The `Tool` interface, the observation it returns, and the context it runs in."""

from __future__ import annotations

import copy
import functools
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict

from codeloop.events import Event
from codeloop.sandbox.base import Limits, Sandbox
from codeloop.workspace.base import Workspace

# "external": a tool of an MCP server that says nothing of its effects, or says they
# destroy: every approval mode asks, unless an allow rule or a hook says otherwise.
Tier = Literal["read", "write", "execute", "network", "external"]


class ToolArgs(BaseModel):
    """Base of every tool's argument model: unknown keys are a schema error the model sees."""

    model_config = ConfigDict(extra="forbid")


@dataclass
class Observation:
    """What a tool hands back: structured, never a raw stream."""

    ok: bool
    output: str = ""
    error: str | None = None
    truncated: bool = False
    untrusted: bool = False
    data: dict[str, Any] = field(default_factory=dict)
    # Where output from outside the repository came from (an MCP server): such output is
    # always fenced as untrusted data, flagged or not.
    source: str = ""
    # Set by `finish` (and anything else that ends the session) to stop the loop.
    ends_session: bool = False

    def render(self) -> str:
        """The text the model reads."""
        parts = []
        if self.error:
            parts.append(f"ERROR: {self.error}")
        if self.output:
            parts.append(self.output)
        return "\n".join(parts) if parts else "(no output)"


@dataclass
class ToolContext:
    """Everything a tool may touch; tools get nothing else."""

    workspace: Workspace
    sandbox: Sandbox
    limits: Limits = field(default_factory=Limits)
    session_id: str = ""
    emit: Callable[[Event], None] = lambda _event: None
    services: dict[str, Any] = field(default_factory=dict)

    @property
    def root(self) -> Path:
        return self.workspace.path


class Tool(ABC):
    name: ClassVar[str]
    description: ClassVar[str]
    args_model: ClassVar[type[ToolArgs]]
    tier: ClassVar[Tier]

    @abstractmethod
    def run(self, args: Any, ctx: ToolContext) -> Observation:
        """Run with validated arguments (an instance of `args_model`)."""

    def schema(self) -> dict[str, Any]:
        return copy.deepcopy(_args_schema(self.args_model))

    def check_arguments(self, arguments: dict[str, Any]) -> str | None:
        """A problem with the raw arguments the args model cannot see (None: none)."""
        return None

    def approval_floor(self) -> str | None:
        """Why this call must go to a person even where the policy allows it (None: no need);
        a deny still wins."""
        return None


@functools.cache
def _args_schema(model: type[ToolArgs]) -> dict[str, Any]:
    """A tool's argument schema; built once per model (~3 ms each) though asked every step."""
    schema = model.model_json_schema()
    schema.pop("title", None)
    return schema
