"""MCP tools in a scripted session: offered to the model, run through the policy like the
built-in tools (rules, hooks, approval by tier), their output fenced, their server stopped."""

from __future__ import annotations

import shlex
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from codeloop.config import Settings
from codeloop.events import (
    ApprovalGiven,
    ApprovalRequested,
    McpServerConnected,
    McpServerFailed,
    McpToolsChanged,
    PolicyDecided,
    SessionStarted,
    ToolCallData,
    ToolCallFinished,
)
from codeloop.llm.scripted import ScriptedModel
from codeloop.mcp.settings import McpServer, McpSettings
from codeloop.session.cleanup import end_run
from codeloop.session.export import trajectory
from codeloop.session.setup import RuntimeParts
from codeloop.session.state import SessionState
from tests.mcp.conftest import TOKEN, HttpServer, server_pids
from tests.session.helpers import call, new_session, turn

pytestmark = pytest.mark.interop


def _settings(git: McpServer, **over: Any) -> Settings:
    return Settings(sandbox=True, verify_on_finish=False, approval_mode="full-auto",
                    mcp=McpSettings(servers={"git": git}), **over)


def _run(tmp: Path, repo: Path, cfg: Settings, *calls: dict[str, Any]
         ) -> tuple[SessionState, list[Any], list[str]]:
    model = ScriptedModel([turn(c) for c in calls] + [turn(call("finish", summary="done"))])
    store, runner = new_session(tmp, repo, model, cfg)
    names = runner.registry.names
    try:
        state = runner.run()
    finally:
        end_run(runner.ctx)
    return state, [s.event for s in store.read(runner.session_id)], names


def _finished(events: list[Any], name: str) -> ToolCallFinished:
    return next(e for e in events if isinstance(e, ToolCallFinished) and e.name == name)


def test_the_model_calls_a_git_server_tool(tmp_path: Path, repo: Path,
                                           git_server: McpServer) -> None:
    (repo / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    state, events, names = _run(tmp_path, repo, _settings(git_server),
                                call("mcp__git__git_status", repo_path=str(repo)))
    assert state.status == "finished"
    assert "mcp__git__git_status" in names and "mcp__git__git_reset" in names
    connected = next(e for e in events if isinstance(e, McpServerConnected))
    assert connected.server == "git" and "mcp__git__git_commit" in connected.tools
    done = _finished(events, "mcp__git__git_status")
    assert done.ok and "modified:   calc.py" in done.output
    assert "[UNTRUSTED TOOL OUTPUT" in done.output and "source=mcp:git" in done.output
    assert "came from the MCP server git" in done.output
    assert done.untrusted and state.tainted
    # The start event records the settings without the MCP servers (their env may hold tokens).
    started = next(e for e in events if isinstance(e, SessionStarted))
    assert "mcp" not in started.config
    deadline = time.monotonic() + 10
    while server_pids(str(tmp_path)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server_pids(str(tmp_path)) == [], "the session left its MCP server running"


def test_a_deny_rule_blocks_the_servers_tools(tmp_path: Path, repo: Path,
                                              git_server: McpServer) -> None:
    cfg = _settings(git_server, permissions={"deny": ["mcp__git__*"]})
    _, events, _ = _run(tmp_path, repo, cfg, call("mcp__git__git_status", repo_path=str(repo)))
    done = _finished(events, "mcp__git__git_status")
    assert not done.ok and "denied by policy (mcp__git__*)" in (done.error or "")
    assert any(isinstance(e, PolicyDecided) and e.decision == "deny" for e in events)


def test_a_pre_tool_hook_blocks_the_call(tmp_path: Path, repo: Path,
                                         git_server: McpServer) -> None:
    script = "import sys; print('no git from agents', file=sys.stderr); sys.exit(2)"
    hook = {"event": "pre_tool", "matcher": "mcp__git__.*",
            "command": f"{shlex.quote(sys.executable)} -c {shlex.quote(script)}"}
    cfg = _settings(git_server, hooks=[hook])
    _, events, _ = _run(tmp_path, repo, cfg, call("mcp__git__git_log", repo_path=str(repo)))
    done = _finished(events, "mcp__git__git_log")
    assert not done.ok and "no git from agents" in (done.error or "")


def test_a_destructive_tool_is_asked_even_in_full_auto(tmp_path: Path, repo: Path,
                                                      git_server: McpServer) -> None:
    state, events, _ = _run(tmp_path, repo, _settings(git_server),
                            call("mcp__git__git_reset", repo_path=str(repo)))
    assert state.status == "waiting_approval"
    decided = next(e for e in events if isinstance(e, PolicyDecided))
    assert decided.decision == "ask" and "asked in every approval mode" in decided.reason


def test_an_allow_rule_lets_a_destructive_tool_run(tmp_path: Path, repo: Path,
                                                   git_server: McpServer) -> None:
    cfg = _settings(git_server, permissions={"allow": ["mcp__git"]})
    state, events, _ = _run(tmp_path, repo, cfg, call("mcp__git__git_reset", repo_path=str(repo)))
    assert state.status == "finished"
    assert _finished(events, "mcp__git__git_reset").ok


def test_arguments_that_break_the_schema_go_back_to_the_model(tmp_path: Path, repo: Path,
                                                             git_server: McpServer) -> None:
    _, events, _ = _run(tmp_path, repo, _settings(git_server),
                        call("mcp__git__git_status", path=str(repo)))
    done = _finished(events, "mcp__git__git_status")
    assert not done.ok and "invalid arguments" in (done.error or "")
    assert "repo_path" in (done.error or "")


def test_a_server_that_cannot_start_is_recorded_and_the_session_goes_on(
        tmp_path: Path, repo: Path) -> None:
    cfg = _settings(McpServer(command=str(tmp_path / "missing-server")))
    state, events, names = _run(tmp_path, repo, cfg)
    assert state.status == "finished"
    failed = next(e for e in events if isinstance(e, McpServerFailed))
    assert failed.server == "git" and "missing-server" in failed.error
    assert not [n for n in names if n.startswith("mcp__")]


def test_a_server_that_changes_its_tools_mid_session_is_asked_again(
        tmp_path: Path, repo: Path, http_server: HttpServer) -> None:
    asked: list[str] = []

    def approver(request: ApprovalRequested, _call: ToolCallData) -> ApprovalGiven:
        asked.append(request.name)
        return ApprovalGiven(call_id=request.call_id, approved=True, digest=request.digest)

    notes = McpServer(url=http_server.url, headers={"Authorization": TOKEN})
    cfg = Settings(sandbox=True, verify_on_finish=False, approval_mode="full-auto",
                   mcp=McpSettings(servers={"notes": notes}))
    model = ScriptedModel([turn(call("mcp__notes__lookup", key="greeting")),
                           turn(call("mcp__notes__grow")),
                           turn(call("mcp__notes__lookup", key="greeting")),
                           turn(call("mcp__notes__lookup", key="greeting")),
                           turn(call("finish", summary="done"))])
    store, runner = new_session(tmp_path, repo, model, cfg, RuntimeParts(approver=approver))
    try:
        state = runner.run()
    finally:
        end_run(runner.ctx)
    events = [s.event for s in store.read(runner.session_id)]
    assert state.status == "finished"
    # Read-only calls run unasked, before the change and once the new list is accepted;
    # the first call after the change goes to a person.
    assert asked == ["mcp__notes__lookup"]
    changes = [e for e in events if isinstance(e, McpToolsChanged)]
    assert [(c.added, c.accepted) for c in changes] == [(["extra"], False), ([], True)]
    connected = next(e for e in events if isinstance(e, McpServerConnected))
    assert "mcp__notes__sneaky" in connected.withheld  # injected description: not offered
    assert "mcp__notes__sneaky" not in runner.registry.names
    assert all(e.ok for e in events if isinstance(e, ToolCallFinished))


def test_the_export_lists_the_mcp_tools_the_model_was_offered(
        tmp_path: Path, repo: Path, git_server: McpServer) -> None:
    model = ScriptedModel([turn(call("finish", summary="done"))])
    store, runner = new_session(tmp_path, repo, model, _settings(git_server))
    try:
        runner.run()
    finally:
        end_run(runner.ctx)
    sid = runner.session_id
    tools = {t["name"]: t for t in trajectory(store.get(sid), store.read(sid), None)["tools"]}
    assert "read_file" in tools
    status = tools["mcp__git__git_status"]
    assert "repo_path" in status["parameters"]["properties"]
    assert status["description"].startswith("[MCP server git]")
