"""`codeloop run` at a real terminal with an MCP server in the user's config: the server's
tools are announced, a destructive one is asked, and the server is gone afterwards."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

from tests.cli.pty_driver import run_in_pty
from tests.cli.test_cli import cli
from tests.mcp.conftest import git_server_command, server_pids
from tests.session.helpers import make_repo

pytestmark = pytest.mark.interop

SGR = re.compile(r"\x1b\[[0-9;]*m")


def test_run_offers_asks_and_stops_the_users_mcp_server(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    config = tmp_path / "config" / "codeloop" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(
        "verify_on_finish = false\napproval_mode = \"full-auto\"\n"
        f"[mcp.servers.git]\ncommand = {json.dumps(git_server_command())}\n"
        f"args = [\"--repository\", {json.dumps(str(repo))}]\n")
    script = tmp_path / "script.json"
    script.write_text(json.dumps([
        {"tool_calls": [{"name": "mcp__git__git_status", "arguments": {"repo_path": str(repo)}}]},
        {"tool_calls": [{"name": "mcp__git__git_reset", "arguments": {"repo_path": str(repo)}}]},
        {"tool_calls": [{"name": "finish", "arguments": {"summary": "looked"}}]},
    ]))
    live = run_in_pty(tmp_path, "run", "look at git", "--repo", str(repo), "--model",
                      f"scripted:{script}", answers=("y",))
    text = SGR.sub("", live.text)
    assert live.code == 0, text[-3000:] + live.err.decode()
    assert re.search(r"MCP server git: \d+ tools", text)
    assert len(live.prompts) == 1  # git_status is read-only: only the reset is asked
    assert "mcp__git__git_reset" in SGR.sub("", live.prompts[0].decode())
    assert _gone(str(tmp_path)), "the run left its MCP server running"


def test_mcp_list_checks_each_configured_server(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    config = tmp_path / "config" / "codeloop" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(
        f"[mcp.servers.git]\ncommand = {json.dumps(git_server_command())}\n"
        f"args = [\"--repository\", {json.dumps(str(repo))}]\n"
        "[mcp.servers.broken]\ncommand = \"/nonexistent/mcp-server\"\n"
        "[mcp.servers.off]\ncommand = \"/nonexistent/other\"\nenabled = false\n")
    out = cli(tmp_path, "mcp-list", "--json")
    assert out.returncode == 0, out.stderr
    rows = {r["server"]: r for r in json.loads(out.stdout)}
    tiers = {t["name"]: t["tier"] for t in rows["git"]["tools"]}
    assert tiers["mcp__git__git_status"] == "read"
    assert tiers["mcp__git__git_reset"] == "external"
    assert rows["git"]["error"] is None
    assert "/nonexistent/mcp-server" in rows["broken"]["error"]
    assert rows["off"] == {"server": "off", "transport": "stdio", "enabled": False,
                           "error": None, "tools": []}
    table = cli(tmp_path, "mcp-list")
    assert "mcp__git__git_status" in table.stdout and "disabled" in table.stdout
    assert _gone(str(tmp_path)), "mcp-list left a server running"


def _gone(marker: str) -> bool:
    deadline = time.monotonic() + 10
    while server_pids(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not server_pids(marker)
