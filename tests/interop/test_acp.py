"""`codeloop acp` driven by the agent-client-protocol package's own client over a pipe: a
real child process, the scripted model, a real repository. The editor's unsaved buffer is
what the model edits, the edit is asked as a permission request, and the updates stream."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any, cast

import pytest
from acp import PROTOCOL_VERSION, spawn_agent_process, text_block
from acp.interfaces import Client
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    FileSystemCapabilities,
    ReadTextFileResponse,
    RequestPermissionResponse,
)

from codeloop.session.store import SQLiteEventStore
from codeloop.workspace.safe_git import git
from tests.cli.test_cli import KEPT_SETTINGS

pytestmark = pytest.mark.interop

SRC = Path(__file__).resolve().parents[2] / "src"
DISK = "def main():\n    return 1\n"
BUFFER = "def main():\n    return 1  # unsaved in the editor\n"


class EditorClient:
    """What an editor does: shows updates, answers permission requests, serves buffers."""

    def __init__(self, repo: Path) -> None:
        self.repo = repo
        self.updates: list[Any] = []
        self.permissions: list[Any] = []
        self.reads: list[str] = []

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(update)

    async def request_permission(self, session_id: str, tool_call: Any, options: list[Any],
                                 **kwargs: Any) -> RequestPermissionResponse:
        self.permissions.append((tool_call, [o.option_id for o in options]))
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id="allow_once"))

    async def read_text_file(self, session_id: str, path: str, line: int | None = None,
                             limit: int | None = None, **kwargs: Any) -> ReadTextFileResponse:
        self.reads.append(path)
        if path == str(self.repo / "app.py"):
            return ReadTextFileResponse(content=BUFFER)
        if path == str(self.repo / "notes.txt"):
            return ReadTextFileResponse(content="an editor buffer\n")
        return ReadTextFileResponse(content=Path(path).read_text())


def _script(path: Path) -> Path:
    turns = [
        {"text": "Reading app.py.",
         "tool_calls": [{"name": "read_file", "arguments": {"path": "app.py"}}]},
        {"text": "Changing the return value.",
         "tool_calls": [{"name": "edit_file", "arguments": {
             "path": "app.py", "old": "    return 1  # unsaved in the editor\n",
             "new": "    return 5  # unsaved in the editor\n"}}]},
        {"text": "Notes, then a look at them.",
         "tool_calls": [{"name": "write_file", "arguments": {"path": "notes.txt",
                                                             "content": "session text\n"}},
                        {"name": "read_file", "arguments": {"path": "notes.txt"}}]},
        {"tool_calls": [{"name": "finish", "arguments": {"summary": "main returns 5"}}]},
        {"tool_calls": [{"name": "finish", "arguments": {"summary": "nothing more to do"}}]},
    ]
    path.write_text(json.dumps(turns))
    return path


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    path.mkdir()
    (path / "app.py").write_text(DISK)
    git(["init", "-q"], path)
    git(["add", "-A"], path)
    git(["-c", "user.name=T", "-c", "user.email=t@example.invalid", "commit", "-qm", "init"],
        path)
    return path


def _env(tmp_path: Path, script: Path | None = None) -> dict[str, str]:
    config = tmp_path / "xdg-config" / "codeloop" / "config.toml"
    config.parent.mkdir(parents=True)
    script = script or _script(tmp_path / "script.json")
    config.write_text(f'model = "scripted:{script}"\n'
                      'verify_on_finish = false\napproval_mode = "ask"\n')
    env = {k: v for k, v in os.environ.items()
           if k in KEPT_SETTINGS or not k.startswith("CODELOOP_")}
    env.update(PYTHONPATH=str(SRC), XDG_CONFIG_HOME=str(config.parent.parent),
               CODELOOP_DATA_DIR=str(tmp_path / "data"),
               CODELOOP_CACHE_DIR=str(tmp_path / "cache"))
    return env


async def _drive(repo: Path, tmp_path: Path) -> tuple[EditorClient, list[str], Any]:
    client = EditorClient(repo)
    env = _env(tmp_path)
    async with spawn_agent_process(cast(Client, client), sys.executable, "-m", "codeloop",
                                   "acp", env=env, cwd=str(tmp_path)) as (conn, _proc):
        init = await conn.initialize(
            protocol_version=PROTOCOL_VERSION,
            client_capabilities=ClientCapabilities(
                fs=FileSystemCapabilities(read_text_file=True, write_text_file=False)))
        session = await conn.new_session(cwd=str(repo), mcp_servers=[])
        first = await asyncio.wait_for(conn.prompt(
            session_id=session.session_id,
            prompt=[text_block("Make main return 5")]), 120)
        second = await asyncio.wait_for(conn.prompt(
            session_id=session.session_id, prompt=[text_block("Anything else?")]), 120)
    # A new editor process loads the session: its conversation comes back as updates.
    later = EditorClient(repo)
    async with spawn_agent_process(cast(Client, later), sys.executable, "-m", "codeloop",
                                   "acp", env=env, cwd=str(tmp_path)) as (conn, _proc):
        await conn.initialize(protocol_version=PROTOCOL_VERSION)
        loaded = await conn.load_session(cwd=str(repo), session_id=session.session_id,
                                         mcp_servers=[])
    return client, [first.stop_reason, second.stop_reason], (init, session, later, loaded)


def test_editor_runs_a_session_over_acp(repo: Path, tmp_path: Path) -> None:
    client, stops, (init, session, later, loaded) = asyncio.run(_drive(repo, tmp_path))
    assert init.agent_info.name == "codeloop" and init.agent_capabilities.load_session
    assert init.agent_capabilities.prompt_capabilities.embedded_context
    assert session.modes.current_mode_id == "ask"
    assert stops == ["end_turn", "end_turn"]
    # The model read the editor's unsaved buffer, and edited that text.
    assert str(repo / "app.py") in client.reads
    kinds = [u.session_update for u in client.updates]
    assert "agent_message_chunk" in kinds and "tool_call" in kinds
    started = [u for u in client.updates if u.session_update == "tool_call"]
    assert [(u.kind, u.status) for u in started][:2] == [("read", "in_progress"),
                                                        ("edit", "pending")]
    assert started[0].title == "read_file app.py"
    # The edit is shown pending while it is asked about, then runs under the same id.
    edit_id = started[1].tool_call_id
    assert client.permissions[0][0].tool_call_id == edit_id
    running = [u for u in client.updates if u.session_update == "tool_call_update"
               and u.tool_call_id == edit_id and u.status == "in_progress"]
    assert running and running[0].title == "edit_file app.py"
    # A file the session already wrote keeps the session's copy: the editor is not asked.
    assert str(repo / "notes.txt") not in client.reads
    outputs = [c.content.text for u in client.updates if u.session_update == "tool_call_update"
               for c in (u.content or []) if c.type == "content"]
    assert any("session text" in o for o in outputs)
    assert not any("an editor buffer" in o for o in outputs)
    # The edit was asked for as a permission, with codeloop's answers as options.
    assert [p[0].title for p in client.permissions] == ["edit_file app.py",
                                                        "write_file notes.txt"]
    asked, options = client.permissions[0]
    assert asked.title == "edit_file app.py" and "return 5" in str(asked.content)
    assert options == ["allow_once", "allow_always", "reject_once"]
    diffs = [c for u in client.updates if u.session_update == "tool_call_update"
             for c in (u.content or []) if c.type == "diff"]
    assert diffs and diffs[0].path == str(repo / "app.py")
    assert diffs[0].new_text == BUFFER.replace("return 1", "return 5")
    assert diffs[0].old_text == DISK
    text = "".join(u.content.text for u in client.updates
                   if u.session_update == "agent_message_chunk")
    assert "main returns 5" in text and "nothing more to do" in text
    assert "codeloop apply" in text
    # The user's file is untouched until they apply.
    assert (repo / "app.py").read_text() == DISK
    # The session id is codeloop's own, and a later editor replays the conversation.
    assert loaded.modes.current_mode_id == "ask"
    said = [u.content.text for u in later.updates if u.session_update == "user_message_chunk"]
    assert said == ["Make main return 5", "Anything else?"]
    replayed = [u.kind for u in later.updates if u.session_update == "tool_call"]
    assert replayed[:2] == ["read", "edit"]
    store = SQLiteEventStore(tmp_path / "data" / "events.sqlite")
    assert store.get(session.session_id).task == "Make main return 5"


async def _cancel_then_continue(repo: Path, tmp_path: Path) -> tuple[EditorClient, list[str]]:
    script = tmp_path / "slow.json"
    look = {"name": "list_files", "arguments": {"path": "."}}
    script.write_text(json.dumps({"delay_s": 0.5, "turns": [
        {"text": "Looking.", "tool_calls": [look]},
        {"text": "Looking again.", "tool_calls": [{**look, "arguments": {"path": ".", "depth": 1}}]},
        {"tool_calls": [{"name": "finish", "arguments": {"summary": "looked around"}}]}]}))
    client = EditorClient(repo)
    async with spawn_agent_process(cast(Client, client), sys.executable, "-m", "codeloop",
                                   "acp", env=_env(tmp_path, script),
                                   cwd=str(tmp_path)) as (conn, _proc):
        await conn.initialize(protocol_version=PROTOCOL_VERSION)
        session = await conn.new_session(cwd=str(repo), mcp_servers=[])
        running = asyncio.ensure_future(conn.prompt(
            session_id=session.session_id, prompt=[text_block("Look around")]))
        while not any(u.session_update == "tool_call" for u in client.updates):
            await asyncio.sleep(0.05)
        await conn.cancel(session_id=session.session_id)
        first = await asyncio.wait_for(running, 60)
        calls_at_cancel = sum(u.session_update == "tool_call" for u in client.updates)
        second = await asyncio.wait_for(conn.prompt(
            session_id=session.session_id, prompt=[text_block("Go on")]), 60)
    assert calls_at_cancel == 1
    return client, [first.stop_reason, second.stop_reason]


def test_cancel_pauses_and_the_next_prompt_continues(repo: Path, tmp_path: Path) -> None:
    client, stops = asyncio.run(_cancel_then_continue(repo, tmp_path))
    assert stops == ["cancelled", "end_turn"]
    # No file was read through the editor: it did not offer fs/read_text_file.
    assert client.reads == []
    text = "".join(u.content.text for u in client.updates
                   if u.session_update == "agent_message_chunk")
    assert "looked around" in text
