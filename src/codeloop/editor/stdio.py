"""Serve the ACP agent on stdin/stdout, with stdout kept for the protocol alone.

Anything else that would write to standard output (a stray print, a child process that
inherits it) goes to standard error instead: one foreign byte on stdout breaks the editor's
JSON-RPC stream."""

from __future__ import annotations

import os
import sys
from typing import cast

from acp import run_agent, stdio_streams
from acp.interfaces import Agent

from codeloop.editor.agent import CodeloopAgent


async def serve(agent: CodeloopAgent) -> None:
    protocol_fd = os.dup(1)
    os.dup2(2, 1)
    with os.fdopen(protocol_fd, "w") as protocol_out:
        # The library connects its writer to `sys.stdout`: point it at the protocol's copy
        # for that moment, and at standard error for everything after.
        sys.stdout = protocol_out
        try:
            reader, writer = await stdio_streams(limit=50 * 1024 * 1024)
        finally:
            sys.stdout = sys.stderr
        # The library answers "method not found" for what an agent does not define (loading,
        # forking, listing sessions): the protocol's optional parts.
        try:
            await run_agent(cast(Agent, agent), writer, reader)
        finally:
            agent.shutdown()
