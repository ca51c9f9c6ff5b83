"""The MCP client against real servers: tools, tiers, schemas, headers, a changing tool
list, injection in descriptions, and no server process left behind."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest
from mcp.types import ToolAnnotations

from codeloop.mcp.connection import McpHub, McpServerError
from codeloop.mcp.settings import McpServer
from codeloop.mcp.tools import ToolWatch, make_tool, screen_tools, tier_of
from codeloop.tools.base import Observation
from tests.mcp.conftest import TOKEN, HttpServer, server_pids

pytestmark = pytest.mark.interop


def test_reference_git_server_over_stdio(git_server: McpServer, repo: Path,
                                         tmp_path: Path) -> None:
    hub = McpHub({"git": git_server})
    try:
        tools = hub.connect()["git"]
        assert not isinstance(tools, McpServerError), tools
        by_name = {t.name: t for t in tools}
        assert tier_of(by_name["git_status"].annotations) == "read"
        assert tier_of(by_name["git_commit"].annotations) == "execute"
        assert tier_of(by_name["git_reset"].annotations) == "external"  # destructive
        assert server_pids(str(tmp_path)), "the server process is not running"
        (repo / "calc.py").write_text("changed\n")
        result = hub.call("git", "git_status", {"repo_path": str(repo)})
        assert "modified:   calc.py" in result.content[0].text  # type: ignore[union-attr]
    finally:
        hub.close()
    deadline = time.monotonic() + 10
    while server_pids(str(tmp_path)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server_pids(str(tmp_path)) == [], "closing left the server process running"


def test_a_server_that_fails_to_start_is_reported_with_its_stderr() -> None:
    hub = McpHub({"broken": McpServer(command="python3", args=[
        "-c", "import sys; print('cannot open the database', file=sys.stderr)"])})
    try:
        result = hub.connect()["broken"]
    finally:
        hub.close()
    assert isinstance(result, McpServerError)
    assert "cannot open the database" in result.message
    assert "mcp.servers.broken.command" in (result.hint or "")


def test_arguments_are_checked_against_the_servers_schema(git_server: McpServer,
                                                          repo: Path) -> None:
    hub = McpHub({"git": git_server})
    try:
        tools = hub.connect()["git"]
        assert isinstance(tools, list)
        spec = next(t for t in tools if t.name == "git_log")
        tool = make_tool(hub, ToolWatch(hub, lambda _e: None), "git", spec)
        assert tool.name == "mcp__git__git_log" and tool.tier == "read"
        assert "repo_path" in (tool.check_arguments({}) or "")
        assert tool.check_arguments({"repo_path": str(repo), "max_count": "ten"})
        assert tool.check_arguments({"repo_path": str(repo), "max_count": 2}) is None
    finally:
        hub.close()


def test_http_server_gets_the_configured_headers(http_server: HttpServer) -> None:
    hub = McpHub({"notes": McpServer(url=http_server.url, headers={"Authorization": TOKEN})})
    try:
        tools = hub.connect()["notes"]
        assert isinstance(tools, list), tools
        result = hub.call("notes", "lookup", {"key": "greeting"})
        assert "hello from the notes server" in result.content[0].text  # type: ignore[union-attr]
    finally:
        hub.close()
    assert all(h.get("authorization") == TOKEN for h in http_server.requests)


def test_http_server_without_its_token_fails_to_connect(http_server: HttpServer) -> None:
    hub = McpHub({"notes": McpServer(url=http_server.url, startup_timeout_s=15)})
    try:
        assert isinstance(hub.connect()["notes"], McpServerError)
    finally:
        hub.close()


def test_descriptions_with_injected_instructions_are_withheld(http_server: HttpServer) -> None:
    hub = McpHub({"notes": McpServer(url=http_server.url, headers={"Authorization": TOKEN})})
    try:
        tools = hub.connect()["notes"]
        assert isinstance(tools, list)
        screened = screen_tools("notes", tools)
    finally:
        hub.close()
    assert "mcp__notes__sneaky" in screened.withheld
    assert "injection" in screened.withheld["mcp__notes__sneaky"]
    assert {t.name for t in screened.offered} == {"lookup", "grow", "poke"}


def test_a_changed_tool_list_asks_again_until_a_call_is_approved(
        http_server: HttpServer) -> None:
    hub = McpHub({"notes": McpServer(url=http_server.url, headers={"Authorization": TOKEN})})
    events: list[object] = []
    try:
        tools = hub.connect()["notes"]
        assert isinstance(tools, list)
        watch = ToolWatch(hub, events.append)
        watch.accept("notes", tools)
        grow = make_tool(hub, watch, "notes", next(t for t in tools if t.name == "grow"))
        assert grow.approval_floor() is None
        obs = grow.run(grow.args_model(), None)  # type: ignore[arg-type]
        assert isinstance(obs, Observation) and obs.ok and obs.untrusted
        reason = grow.approval_floor()
        assert reason is not None and "changed its tool list" in reason
        assert [getattr(e, "added", None) for e in events] == [["extra"]]
        assert grow.approval_floor() is not None  # still asked; recorded once
        assert len(events) == 1
        grow.run(grow.args_model(), None)  # type: ignore[arg-type]  # a person approved it
        assert getattr(events[-1], "accepted", False) is True
    finally:
        hub.close()


def test_tiers_from_annotations() -> None:
    assert tier_of(None) == "external"
    assert tier_of(ToolAnnotations(read_only_hint=True)) == "network"  # open world by default
    assert tier_of(ToolAnnotations(read_only_hint=True, open_world_hint=False)) == "read"
    assert tier_of(ToolAnnotations(destructive_hint=False)) == "execute"
    assert tier_of(ToolAnnotations(destructive_hint=True)) == "external"
    assert tier_of(ToolAnnotations()) == "external"  # destructive unless it says otherwise


ENV_SERVER = """
import os
from mcp.server.mcpserver import MCPServer

server = MCPServer("env")


@server.tool()
def environment() -> str:
    return "\\n".join(f"{k}={v}" for k, v in sorted(os.environ.items()))


server.run("stdio")
"""


def test_a_stdio_server_gets_only_the_environment_it_is_given(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-must-not-leak")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "aws-must-not-leak")
    script = tmp_path / "env_server.py"
    script.write_text(ENV_SERVER)
    hub = McpHub({"env": McpServer(command=sys.executable, args=[str(script)],
                                   env={"NOTES_TOKEN": "given"})})
    try:
        assert isinstance(hub.connect()["env"], list)
        seen = hub.call("env", "environment", {}).content[0].text  # type: ignore[union-attr]
    finally:
        hub.close()
    assert "NOTES_TOKEN=given" in seen
    assert "must-not-leak" not in seen
    assert "PATH=" in seen  # the SDK's few safe variables


def test_a_server_that_never_answers_times_out_and_is_stopped(tmp_path: Path) -> None:
    marker = tmp_path / "silent-server-marker"
    hub = McpHub({"silent": McpServer(command="python3", startup_timeout_s=1, args=[
        "-c", "import sys, time; time.sleep(120)", str(marker)])})
    began = time.monotonic()
    try:
        result = hub.connect()["silent"]
    finally:
        hub.close()
    assert isinstance(result, McpServerError) and "within 1 s" in result.message
    assert time.monotonic() - began < 15
    assert not _pids_with(str(marker)), "the silent server outlived the session"


def _pids_with(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and marker.encode() in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found
