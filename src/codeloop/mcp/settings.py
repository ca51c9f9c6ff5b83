"""`[mcp.servers.NAME]` in the user's config: the shape other agents use (`command`/`args`/
`env` for a local server, `url`/`headers` for a streamable-HTTP one), so a user can copy theirs.

Only the user's own config file may declare servers: a stdio server is a host process, outside
the sandbox, so a repository's config file never adds one (see `config.project_layer`).
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field, model_validator

# A server's name is part of its tools' names (`mcp__NAME__TOOL`) and of permission rules.
SERVER_NAME = re.compile(r"^[A-Za-z0-9_-]{1,40}$")


class McpServer(BaseModel):
    """One MCP server: a command to start (stdio) or a URL (streamable HTTP)."""

    model_config = ConfigDict(extra="forbid")

    command: str | None = None
    args: list[str] = Field(default_factory=list)
    # Passed to the server as given, over the SDK's few safe inherited variables (PATH,
    # HOME, ...): the rest of the user's environment, and its secrets, stays out.
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    enabled: bool = True
    # Seconds to wait for the server to start and list its tools, and for one tool call.
    startup_timeout_s: float = Field(default=30.0, gt=0, le=600)
    call_timeout_s: float = Field(default=120.0, gt=0, le=3600)

    @model_validator(mode="after")
    def _one_transport(self) -> McpServer:
        if (self.command is None) == (self.url is None):
            raise ValueError("give either `command` (a stdio server) or `url` (streamable HTTP)")
        if self.url is not None and (self.args or self.env or self.cwd):
            raise ValueError("`args`, `env` and `cwd` are for stdio servers; an HTTP server "
                             "takes `url` and `headers`")
        if self.command is not None and self.headers:
            raise ValueError("`headers` are for HTTP servers; a stdio server takes `env`")
        if self.url is not None and not self.url.startswith(("http://", "https://")):
            raise ValueError("`url` must be an http:// or https:// URL")
        return self

    @property
    def transport(self) -> str:
        return "stdio" if self.command is not None else "http"


class McpSettings(BaseModel):
    """`[mcp]`: the servers whose tools every session gets."""

    model_config = ConfigDict(extra="forbid")

    servers: dict[str, McpServer] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _names(self) -> McpSettings:
        for name in self.servers:
            if not SERVER_NAME.match(name) or "__" in name:
                raise ValueError(f"MCP server name {name!r}: use letters, digits, '-' and single "
                                 "'_' (it becomes part of tool names: mcp__NAME__TOOL)")
        return self

    @property
    def enabled(self) -> dict[str, McpServer]:
        return {name: s for name, s in self.servers.items() if s.enabled}
