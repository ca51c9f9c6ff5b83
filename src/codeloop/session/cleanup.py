"""What a session leaves behind once it is done with its workspace: the view's own index, its
egress proxy, its MCP servers."""

from __future__ import annotations

import os

from codeloop.tools.base import ToolContext
from codeloop.workspace.base import Workspace

# How long the end of a run waits for an index still being built before leaving its
# deletion to the index's thread.
END_WAIT_S = 2.0


def drop_view_index(workspace: Workspace) -> None:
    """Close and delete the index made for the workspace's merged view (a new directory per
    session, never reused); the repository's own index, which seeds the next one, stays."""
    from codeloop.index.registry import discard_index
    if os.path.realpath(workspace.path) != os.path.realpath(workspace.root):
        discard_index(workspace.path)


def end_run(ctx: ToolContext) -> None:
    """A runner has stopped (finished, paused or failed): stop its MCP servers and egress
    proxy and release its view's index. A later resume starts new ones, seeds a new index from
    the repository's and re-parses only what differs."""
    from codeloop.index.warmup import WARMUP_SERVICE, IndexWarmup
    from codeloop.mcp.attach import detach_mcp
    from codeloop.session.network import NETWORK, SessionNetwork
    warmup = ctx.services.pop(WARMUP_SERVICE, None)
    ctx.services.pop("index", None)
    detach_mcp(ctx)
    network = ctx.services.pop(NETWORK, None)
    if isinstance(network, SessionNetwork):
        network.close()
    if isinstance(warmup, IndexWarmup):
        # Its thread may still be writing the view's index: deleted when it is done.
        warmup.release(lambda: drop_view_index(ctx.workspace), END_WAIT_S)
    else:
        drop_view_index(ctx.workspace)
