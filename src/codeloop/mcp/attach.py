"""A session's MCP servers: started when its runner is built, their screened tools added to
the registry, every outcome recorded as an event, all stopped when the run ends.

The SDK is imported only when a server is configured: it costs every command's start-up
time otherwise (seconds on a busy machine)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from codeloop.events import McpServerConnected, McpServerFailed
from codeloop.mcp.settings import McpSettings
from codeloop.tools.base import ToolContext
from codeloop.tools.registry import ToolRegistry

if TYPE_CHECKING:
    from codeloop.mcp.connection import McpHub

# Where the session's hub lives in `ToolContext.services` (closed by `end_run`).
MCP_HUB = "mcp_hub"


def attach_mcp(settings: McpSettings, registry: ToolRegistry, ctx: ToolContext) -> McpHub | None:
    """Connect the enabled servers and offer their tools; None when there are none."""
    servers = settings.enabled
    if not servers:
        return None
    from codeloop.mcp.connection import McpHub, McpServerError
    from codeloop.mcp.tools import ToolWatch, fingerprint, make_tool, screen_tools

    hub = McpHub(servers)
    ctx.services[MCP_HUB] = hub  # first: a failure below still closes what started
    # ctx.emit is the runner's, bound late: it is replaced when the runner is made.
    watch = ToolWatch(hub, lambda event: ctx.emit(event))
    for name, result in hub.connect().items():
        if isinstance(result, McpServerError):
            hint = f" ({result.hint})" if result.hint else ""
            ctx.emit(McpServerFailed(server=name, error=result.message + hint))
            continue
        screened = screen_tools(name, result)
        watch.accept(name, result)
        tools = [make_tool(hub, watch, name, spec) for spec in screened.offered]
        for tool in tools:
            registry.add(tool)
        ctx.emit(McpServerConnected(
            server=name, transport=servers[name].transport, tools=[t.name for t in tools],
            withheld=screened.withheld, fingerprint=fingerprint(result),
            specs=[{"name": t.name, "description": t.description, "parameters": t.schema()}
                   for t in tools]))
    return hub


def detach_mcp(ctx: ToolContext) -> None:
    """Stop the session's servers (their processes included)."""
    hub = ctx.services.pop(MCP_HUB, None)
    if hub is not None:
        hub.close()
