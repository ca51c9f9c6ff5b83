"""An MCP server's tools as session tools: `mcp__SERVER__TOOL`, arguments checked against the
server's JSON schema, a risk tier read from the tool's annotations, output fenced as
untrusted, and a tool list that changes mid-session sent back to a person."""

from __future__ import annotations

import copy
import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from jsonschema import SchemaError
from jsonschema.validators import validator_for
from mcp.types import (
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
    ToolAnnotations,
)
from mcp.types import (
    Tool as McpToolSpec,
)
from pydantic import ConfigDict

from codeloop.events import Event, McpToolsChanged
from codeloop.mcp.connection import McpHub, McpServerError
from codeloop.policy.untrusted import inspect
from codeloop.tools.base import Observation, Tier, Tool, ToolArgs, ToolContext

# Function names the model APIs accept.
_FUNCTION_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_MAX_DESCRIPTION = 2000


class McpArgs(ToolArgs):
    """Whatever the server's schema takes: checked by `check_arguments`, kept as given."""

    model_config = ConfigDict(extra="allow")


def tool_name(server: str, tool: str) -> str:
    return f"mcp__{server}__{tool}"


def tier_of(annotations: ToolAnnotations | None) -> Tier:
    """The policy tier a tool's annotations claim (hints from a server the user chose).
    Read-only and closed-world reads; read-only but reaching out, network; says it destroys
    nothing, execute; silent or destructive, external (asked in every mode)."""
    if annotations is None:
        return "external"
    if annotations.read_only_hint:
        return "read" if annotations.open_world_hint is False else "network"
    if annotations.destructive_hint is False:
        return "execute"
    return "external"


def fingerprint(tools: list[McpToolSpec]) -> str:
    """A digest of what the model is told of each tool and what each may do."""
    return hashlib.sha256(json.dumps(
        sorted((_summary(t) for t in tools), key=lambda s: str(s["name"])), sort_keys=True,
        default=str).encode()).hexdigest()[:16]


def _summary(tool: McpToolSpec) -> dict[str, Any]:
    return {"name": tool.name, "description": tool.description or "",
            "schema": tool.input_schema,
            "annotations": tool.annotations.model_dump() if tool.annotations else None}


@dataclass
class Screened:
    """A server's tools that may be offered, and the ones withheld with why."""

    offered: list[McpToolSpec] = field(default_factory=list)
    withheld: dict[str, str] = field(default_factory=dict)


def screen_tools(server: str, tools: list[McpToolSpec]) -> Screened:
    """Withhold tools whose description or schema carries instructions aimed at the model,
    whose name no model API accepts, or whose schema is not a valid JSON schema."""
    out = Screened()
    for tool in tools:
        name = tool_name(server, tool.name)
        problem = _problem(name, tool)
        if problem is None:
            out.offered.append(tool)
        else:
            out.withheld[name] = problem
    return out


def _problem(name: str, tool: McpToolSpec) -> str | None:
    if not _FUNCTION_NAME.match(name):
        return "its name is not a valid function name (letters, digits, _ and -, at most 64)"
    try:
        validator_for(tool.input_schema).check_schema(tool.input_schema)
    except SchemaError as exc:
        return f"its input schema is not a valid JSON schema: {exc.message}"
    text = "\n".join([tool.title or "", tool.description or "",
                      json.dumps(tool.input_schema, ensure_ascii=False)])
    found = inspect(text)
    if found.flags:
        return "its description looks like instructions to the model: " + ", ".join(found.flags)
    return None


class ToolWatch:
    """Each server's tool list as a person last accepted it; re-read before every call, so a
    server that changes its tools mid-session is asked about again."""

    def __init__(self, hub: McpHub, emit: Callable[[Event], None]) -> None:
        self.hub = hub
        self.emit = emit
        self.accepted: dict[str, list[McpToolSpec]] = {}
        self.pending: dict[str, list[McpToolSpec]] = {}

    def accept(self, server: str, tools: list[McpToolSpec]) -> None:
        self.accepted[server] = tools

    def floor(self, server: str) -> str | None:
        """Why a call to this server needs a person now (its tools changed), else None."""
        try:
            now = self.hub.list_tools(server)
        except McpServerError:
            return None  # the call itself will fail and say why
        before = self.accepted.get(server, [])
        new = fingerprint(now)
        if new == fingerprint(before):
            self.pending.pop(server, None)
            return None
        if self.pending.get(server) is None or fingerprint(self.pending[server]) != new:
            self.pending[server] = now
            self.emit(McpToolsChanged(server=server, fingerprint=new, **_changes(before, now)))
        return (f"the MCP server {server!r} changed its tool list since it was accepted; "
                "approving this call accepts the new list")

    def approved(self, server: str) -> None:
        """A person approved a call made after a change: the new list stands."""
        now = self.pending.pop(server, None)
        if now is not None:
            self.accepted[server] = now
            self.emit(McpToolsChanged(server=server, fingerprint=fingerprint(now), accepted=True))


def _changes(before: list[McpToolSpec], now: list[McpToolSpec]) -> dict[str, list[str]]:
    old = {t.name: _summary(t) for t in before}
    new = {t.name: _summary(t) for t in now}
    return {"added": sorted(set(new) - set(old)), "removed": sorted(set(old) - set(new)),
            "changed": sorted(n for n in set(old) & set(new) if old[n] != new[n])}


class McpTool(Tool):
    """One tool of one server; made per tool by `make_tool` (the name is the tool's own)."""

    args_model: ClassVar[type[ToolArgs]] = McpArgs

    def __init__(self, hub: McpHub, watch: ToolWatch, server: str, spec: McpToolSpec) -> None:
        self.hub = hub
        self.watch = watch
        self.server = server
        self.spec = spec
        self._validator = validator_for(spec.input_schema)(spec.input_schema)

    def schema(self) -> dict[str, Any]:
        schema = copy.deepcopy(self.spec.input_schema)
        schema.setdefault("type", "object")
        schema.setdefault("properties", {})
        return schema

    def check_arguments(self, arguments: dict[str, Any]) -> str | None:
        errors = sorted(self._validator.iter_errors(arguments), key=lambda e: list(e.path))
        if not errors:
            return None
        return "; ".join(f"{'.'.join(map(str, e.path)) or 'arguments'}: {e.message}"
                         for e in errors[:5])

    def approval_floor(self) -> str | None:
        return self.watch.floor(self.server)

    def run(self, args: Any, ctx: ToolContext) -> Observation:
        # Authorised: if the list had changed, a person has just approved this call.
        self.watch.approved(self.server)
        arguments = args.model_dump() if isinstance(args, ToolArgs) else dict(args)
        try:
            result = self.hub.call(self.server, self.spec.name, arguments)
        except McpServerError as exc:
            return Observation(ok=False, error=f"{exc.message} ({exc.hint})" if exc.hint
                               else exc.message)
        except Exception as exc:  # a protocol error from the server: the model may retry
            return Observation(ok=False, error=f"the MCP server {self.server!r} refused the "
                               f"call: {type(exc).__name__}: {exc}", untrusted=True,
                               source=f"mcp:{self.server}")
        text = render_result(result)
        source = f"mcp:{self.server}"
        if result.is_error:
            return Observation(ok=False, error=text or "the tool reported an error",
                               untrusted=True, source=source)
        return Observation(ok=True, output=text, untrusted=True, source=source,
                           data={"mcp_server": self.server})


def make_tool(hub: McpHub, watch: ToolWatch, server: str, spec: McpToolSpec) -> McpTool:
    """A `Tool` subclass for this one tool (name, description and tier are class-level)."""
    description = inspect(spec.description or spec.title or "").text[:_MAX_DESCRIPTION]
    attrs = {"name": tool_name(server, spec.name), "tier": tier_of(spec.annotations),
             "description": f"[MCP server {server}] {description}".strip()}
    cls = type(f"McpTool_{server}_{spec.name}", (McpTool,), attrs)
    tool: McpTool = cls(hub, watch, server, spec)
    return tool


def render_result(result: CallToolResult) -> str:
    """The result's content as text: text blocks as they are, others named."""
    parts: list[str] = []
    for block in result.content:
        if isinstance(block, TextContent):
            parts.append(block.text)
        elif isinstance(block, EmbeddedResource):
            res = block.resource
            parts.append(res.text if isinstance(res, TextResourceContents)
                         else f"[binary resource {res.uri}]")
        elif isinstance(block, ResourceLink):
            parts.append(f"[resource link {block.uri}]")
        elif isinstance(block, ImageContent):
            parts.append(f"[image {block.mime_type}, {len(block.data)} base64 characters]")
        else:
            parts.append(f"[{getattr(block, 'type', 'unknown')} content]")
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False, indent=1))
    return "\n".join(parts)
