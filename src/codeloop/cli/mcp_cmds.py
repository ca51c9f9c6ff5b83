"""`mcp-serve`: codeloop as an MCP server over stdio, for other agents and IDEs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from codeloop.cli.options import DataDir
from codeloop.cli.server_cmds import allowed_roots
from codeloop.config import data_dir as default_data_dir


def register(app: typer.Typer) -> None:
    @app.command("mcp-serve")
    def mcp_serve(
        data: DataDir = None,
        allow_root: Annotated[list[Path] | None, typer.Option(
            "--allow-root", metavar="DIR", help="A directory whose repositories sessions may open "
                                 "(repeatable; default: the current directory).")] = None,
    ) -> None:
        """Serve codeloop over MCP on stdin/stdout: tools to start a session, read its status
        and diff, and answer its approvals."""
        from codeloop.mcp.serve import build_server

        server = build_server(data or default_data_dir(), allowed_roots(allow_root or []))
        server.run("stdio")
