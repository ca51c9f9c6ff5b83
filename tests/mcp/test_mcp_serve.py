"""`codeloop mcp-serve` driven by the SDK's own client over stdio: start a session, watch its
status, answer its approval, read its diff."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from codeloop.events import ToolCallFinished
from codeloop.session.store import SQLiteEventStore
from tests.mcp.conftest import git_server_command
from tests.session.helpers import call, make_repo

pytestmark = pytest.mark.interop

SRC = Path(__file__).resolve().parents[2] / "src"
EDIT = call("edit_file", path="calc.py", old="return a - b", new="return a + b")
FINISH = call("finish", summary="add() adds now")


def _server(tmp: Path, repo: Path, config_text: str = "") -> StdioServerParameters:
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "codeloop" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("verify_on_finish = false\n" + config_text)
    env = {k: os.environ[k] for k in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME",
                                      "CODELOOP_CACHE_DIR", "CODELOOP_EMBEDDINGS")
           if k in os.environ}
    env["PYTHONPATH"] = f"{SRC}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "codeloop", "mcp-serve", "--data-dir", str(tmp / "data"),
              "--allow-root", str(repo.parent)],
        env=env)


def _script(tmp: Path, *calls: dict[str, Any]) -> str:
    path = tmp / "script.json"
    path.write_text(json.dumps([{"text": "", "tool_calls": [c]} for c in calls]))
    return f"scripted:{path}"


async def _tool(client: Client, name: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(name, arguments)
    assert not result.is_error, result.content
    assert isinstance(result.structured_content, dict), result
    return result.structured_content


async def _settled(client: Client, sid: str) -> dict[str, Any]:
    deadline = time.monotonic() + 60
    while True:
        status = await _tool(client, "session_status", session_id=sid)
        if not status["active"] and status["status"] not in ("running", "created"):
            return status
        assert time.monotonic() < deadline, status
        await asyncio.sleep(0.1)


def test_a_session_started_over_mcp_runs_to_its_diff(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)

    async def drive() -> tuple[list[str], dict[str, Any], dict[str, Any]]:
        async with Client(_server(tmp_path, repo)) as client:
            tools = sorted(t.name for t in (await client.list_tools()).tools)
            started = await _tool(client, "start_session", task="fix add", repo=str(repo),
                                  model=_script(tmp_path, EDIT, FINISH))
            status = await _settled(client, started["session_id"])
            diff = await _tool(client, "session_diff", session_id=started["session_id"])
            return tools, status, diff

    tools, status, diff = asyncio.run(drive())
    assert tools == ["approve", "session_diff", "session_status", "start_session"]
    assert status["status"] == "finished" and "add() adds now" in status["summary"]
    assert diff["files"] == ["calc.py"] and "+    return a + b" in diff["diff"]
    assert "return a - b" in (repo / "calc.py").read_text()  # the repository is untouched


def test_an_approval_is_answered_over_mcp(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)

    async def drive() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
        async with Client(_server(tmp_path, repo)) as client:
            started = await _tool(client, "start_session", task="fix add", repo=str(repo),
                                  model=_script(tmp_path, EDIT, FINISH), approval_mode="ask")
            sid = started["session_id"]
            waiting = await _settled(client, sid)
            pending = waiting["pending_approvals"]
            assert pending, waiting
            await _tool(client, "approve", session_id=sid, call_id=pending[0]["call_id"])
            done = await _settled(client, sid)
            return waiting, done, await _tool(client, "session_diff", session_id=sid)

    waiting, done, diff = asyncio.run(drive())
    assert waiting["status"] == "waiting_approval"
    assert waiting["pending_approvals"][0]["name"] == "edit_file"
    assert done["status"] == "finished"
    assert diff["files"] == ["calc.py"]


def test_a_repository_outside_the_allowed_roots_is_refused(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "inside")
    other = make_repo(tmp_path / "outside")

    async def drive() -> str:
        async with Client(_server(tmp_path, repo)) as client:
            result = await client.call_tool("start_session", {
                "task": "x", "repo": str(other), "model": _script(tmp_path, FINISH)})
            assert result.is_error
            return str(result.content)

    assert "outside" in asyncio.run(drive())


def test_sessions_started_over_mcp_get_the_users_mcp_servers(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    config = (f"[mcp.servers.git]\ncommand = {json.dumps(git_server_command())}\n"
              f"args = [\"--repository\", {json.dumps(str(repo))}]\n")
    status_call = call("mcp__git__git_status", repo_path=str(repo))

    async def drive() -> tuple[str, dict[str, Any]]:
        async with Client(_server(tmp_path, repo, config)) as client:
            started = await _tool(client, "start_session", task="look", repo=str(repo),
                                  model=_script(tmp_path, status_call, FINISH))
            return started["session_id"], await _settled(client, started["session_id"])

    sid, status = asyncio.run(drive())
    assert status["status"] == "finished"
    events = [s.event for s in SQLiteEventStore(tmp_path / "data" / "events.sqlite").read(sid)]
    done = next(e for e in events if isinstance(e, ToolCallFinished))
    assert done.name == "mcp__git__git_status" and done.ok and "On branch" in done.output
