"""`mcp-serve`: codeloop as an MCP server over stdio, for other agents and IDEs; `mcp-list`:
the MCP servers a session would start, and what they offer."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from codeloop.cli.options import DataDir
from codeloop.cli.safe_text import print_json, shown, terminal_console

if TYPE_CHECKING:
    from codeloop.mcp.settings import McpSettings


def server_report(settings: McpSettings) -> list[dict[str, Any]]:
    """Start each enabled server, list its tools (tier, offered or withheld), stop it."""
    from codeloop.mcp.connection import McpHub, McpServerError
    from codeloop.mcp.tools import screen_tools, tier_of, tool_name

    hub = McpHub(settings.enabled)
    try:
        results = hub.connect()
    finally:
        hub.close()
    report: list[dict[str, Any]] = []
    for name, config in settings.servers.items():
        row: dict[str, Any] = {"server": name, "transport": config.transport,
                               "enabled": config.enabled, "error": None, "tools": []}
        result = results.get(name)
        if isinstance(result, McpServerError):
            row["error"] = f"{result.message} ({result.hint})" if result.hint else result.message
        elif result is not None:
            withheld = screen_tools(name, result).withheld
            row["tools"] = [{"name": tool_name(name, t.name), "tier": tier_of(t.annotations),
                             "withheld": withheld.get(tool_name(name, t.name))}
                            for t in result]
        report.append(row)
    return report


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
        from codeloop.cli.server_cmds import allowed_roots
        from codeloop.config import data_dir as default_data_dir
        from codeloop.mcp.serve import build_server

        server = build_server(data or default_data_dir(), allowed_roots(allow_root or []))
        server.run("stdio")

    @app.command("mcp-list")
    def mcp_list(
        json_out: Annotated[bool, typer.Option("--json", help="Print the servers as JSON.")] = False,
    ) -> None:
        """Start the MCP servers of your config, list their tools with the tier each gets, and
        stop them: a check that a server entry works before a session needs it."""
        from codeloop.config import load_settings
        report = server_report(load_settings().mcp)
        if json_out:
            print_json(report, indent=2)
            return
        console = terminal_console()
        if not report:
            console.print("no MCP servers configured: add [mcp.servers.NAME] to your config "
                          "(docs/mcp.md)")
            return
        table = Table(title="MCP servers")
        for col in ("server", "tool", "tier", "note"):
            table.add_column(col)
        for row in report:
            if not row["enabled"] or row["error"]:
                note = "disabled" if not row["enabled"] else row["error"]
                table.add_row(shown(row["server"]), "", "", shown(note, "red"))
            for tool in row["tools"]:
                note = f"withheld: {tool['withheld']}" if tool["withheld"] else ""
                table.add_row(shown(row["server"]), shown(tool["name"]), tool["tier"],
                              shown(note, "yellow"))
        console.print(table)
