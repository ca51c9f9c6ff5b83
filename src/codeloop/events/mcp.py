"""Events of MCP servers: which connected with which tools, which failed, which changed."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from codeloop.events.base import EventBase


class McpServerConnected(EventBase):
    type: Literal["mcp_server_connected"] = "mcp_server_connected"
    server: str
    transport: str
    # The tools offered to the model, as `mcp__SERVER__TOOL`.
    tools: list[str] = Field(default_factory=list)
    # Tools left out, with why (an injection finding in the description, a bad name).
    withheld: dict[str, str] = Field(default_factory=dict)
    # A digest of the tool list as connected: a later change asks a person again.
    fingerprint: str = ""
    # What the model is told of each offered tool: name, description, parameters.
    specs: list[dict[str, Any]] = Field(default_factory=list)


class McpServerFailed(EventBase):
    type: Literal["mcp_server_failed"] = "mcp_server_failed"
    server: str
    error: str


class McpToolsChanged(EventBase):
    type: Literal["mcp_tools_changed"] = "mcp_tools_changed"
    server: str
    added: list[str] = Field(default_factory=list)
    removed: list[str] = Field(default_factory=list)
    changed: list[str] = Field(default_factory=list)
    fingerprint: str = ""
    # True once a person approved a call made after the change: the new list is accepted.
    accepted: bool = False
