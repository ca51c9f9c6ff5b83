"""What a session leaves behind once it is done with its workspace: the view's own index."""

from __future__ import annotations

import os

from codeloop.index.registry import discard_index
from codeloop.mcp.attach import detach_mcp
from codeloop.tools.base import ToolContext
from codeloop.workspace.base import Workspace


def drop_view_index(workspace: Workspace) -> None:
    """Close and delete the index made for the workspace's merged view (a new directory per
    session, never reused); the repository's own index, which seeds the next one, stays."""
    if os.path.realpath(workspace.path) != os.path.realpath(workspace.root):
        discard_index(workspace.path)


def end_run(ctx: ToolContext) -> None:
    """A runner has stopped (finished, paused or failed): stop its MCP servers and release
    its view's index. A later resume starts the servers again, seeds a new index from the
    repository's and re-parses only what differs."""
    ctx.services.pop("index", None)
    detach_mcp(ctx)
    drop_view_index(ctx.workspace)
