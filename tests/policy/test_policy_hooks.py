"""Hooks are real programs written to tmp_path; every failure mode must come out as deny."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from codeloop.policy.engine import PolicyEngine
from codeloop.policy.hook_pins import HookGuard
from codeloop.policy.hooks import HookEvent, HookSpec, HookVerdict, hook_payload, run_hooks
from codeloop.policy.rules import PolicyConfigError

HookScript = Callable[[str], str]


def pre(command: str, matcher: str = "*", timeout: float = 10.0) -> HookSpec:
    return HookSpec("pre_tool", matcher, command, timeout)


def run_pinned(hooks: list[HookSpec], event: HookEvent, name: str, args: dict[str, Any],
               session_id: str, repo: Path) -> HookVerdict:
    """`run_hooks` as a session runs them: files pinned first, run in the repository."""
    guard = HookGuard.pin_now([h.command for h in hooks], repo)
    return run_hooks(hooks, event, name, args, session_id, repo, guard=guard)


def test_hook_receives_claude_code_shaped_json(hook_script: HookScript, repo: Path, tmp_path: Path) -> None:
    dump = tmp_path / "seen.json"
    cmd = hook_script(f"open({str(dump)!r}, 'w').write(sys.stdin.read())\n")
    verdict = run_pinned([pre(cmd)], "pre_tool", "run", {"command": "pytest -q"}, "s-1", repo)
    assert verdict.action is None
    seen = json.loads(dump.read_text())
    assert seen["hook_event_name"] == "PreToolUse"
    assert seen["tool_name"] == "Bash"
    assert seen["tool_input"] == {"command": "pytest -q"}
    assert seen["session_id"] == "s-1"
    assert seen["cwd"] == str(repo)
    assert seen["codeloop_tool_name"] == "run"


def test_edit_input_gets_claude_code_key_aliases() -> None:
    payload = hook_payload("pre_tool", "edit_file", {"path": "a.py", "old": "x", "new": "y"},
                           "s", Path("/r"))
    assert payload["tool_name"] == "Edit"
    assert payload["tool_input"]["file_path"] == "a.py"
    assert payload["tool_input"]["old_string"] == "x"
    assert payload["tool_input"]["new_string"] == "y"


@pytest.mark.parametrize(
    ("body", "action"),
    [
        ("sys.exit(0)\n", None),
        ("print(json.dumps({'decision': 'approve'}))\n", "allow"),
        ("print(json.dumps({'decision': 'block', 'reason': 'no'}))\n", "deny"),
        ("print(json.dumps({'hookSpecificOutput': {'hookEventName': 'PreToolUse', "
         "'permissionDecision': 'allow', 'permissionDecisionReason': 'ok'}}))\n", "allow"),
        ("print(json.dumps({'hookSpecificOutput': {'permissionDecision': 'deny', "
         "'permissionDecisionReason': 'policy says no'}}))\n", "deny"),
        ("print(json.dumps({'hookSpecificOutput': {'permissionDecision': 'ask'}}))\n", "ask"),
        ("print(json.dumps({'continue': False, 'stopReason': 'stop'}))\n", "deny"),
        ("print(json.dumps({'suppressOutput': True}))\n", None),
        ("sys.stderr.write('rm is not allowed here'); sys.exit(2)\n", "deny"),
        ("raise RuntimeError('hook bug')\n", "deny"),
        ("sys.exit(3)\n", "deny"),
        ("print('sure, go ahead')\n", "deny"),
        ("print('[1, 2]')\n", "deny"),
        ("print(json.dumps({'decision': 'maybe'}))\n", "deny"),
        ("print(json.dumps({'hookSpecificOutput': {'permissionDecision': 7}}))\n", "deny"),
        ("print(json.dumps({'hookSpecificOutput': {'permissionDecision': 'allow', "
         "'updatedInput': {'command': 'ls --safe'}}}))\n", "deny"),
    ],
)
def test_hook_answers(body: str, action: str | None, hook_script: HookScript, repo: Path) -> None:
    verdict = run_pinned([pre(hook_script(body))], "pre_tool", "run", {"command": "ls"}, "s", repo)
    assert verdict.action == action


def test_exit_2_reason_is_stderr(hook_script: HookScript, repo: Path) -> None:
    cmd = hook_script("sys.stderr.write('rm is not allowed here'); sys.exit(2)\n")
    verdict = run_pinned([pre(cmd)], "pre_tool", "run", {"command": "rm x"}, "s", repo)
    assert verdict.reason == "rm is not allowed here"


def test_hook_timeout_is_deny_and_kills_the_hook(hook_script: HookScript, repo: Path, tmp_path: Path) -> None:
    marker = tmp_path / "survived"
    cmd = hook_script(f"time.sleep(30)\nopen({str(marker)!r}, 'w').write('x')\n")
    verdict = run_pinned([pre(cmd, timeout=0.5)], "pre_tool", "run", {"command": "ls"}, "s", repo)
    assert verdict.action == "deny"
    assert "timed out" in verdict.reason
    assert not marker.exists()


def test_missing_hook_program_is_deny(repo: Path) -> None:
    verdict = run_pinned([pre("/nonexistent/hook-program")], "pre_tool", "run", {"command": "ls"},
                        "s", repo)
    assert verdict.action == "deny"


def test_matcher_selects_tools(hook_script: HookScript, repo: Path) -> None:
    deny = hook_script("sys.exit(2)\n")
    hooks = [pre(deny, matcher="Edit|Write")]
    assert run_pinned(hooks, "pre_tool", "edit_file", {"path": "a"}, "s", repo).action == "deny"
    assert run_pinned(hooks, "pre_tool", "write_file", {"path": "a"}, "s", repo).action == "deny"
    assert run_pinned(hooks, "pre_tool", "run", {"command": "ls"}, "s", repo).action is None
    ours = [pre(deny, matcher="run")]
    assert run_pinned(ours, "pre_tool", "run", {"command": "ls"}, "s", repo).action == "deny"
    assert run_pinned(ours, "pre_tool", "runner", {}, "s", repo).action is None


def test_bad_matcher_is_a_config_error() -> None:
    with pytest.raises(PolicyConfigError):
        pre("true", matcher="(unclosed")


def test_first_deny_wins_over_allows(hook_script: HookScript, repo: Path) -> None:
    allow = hook_script("print(json.dumps({'decision': 'approve'}))\n")
    deny = hook_script("sys.stderr.write('second hook says no'); sys.exit(2)\n")
    verdict = run_pinned([pre(allow), pre(deny)], "pre_tool", "run", {"command": "ls"}, "s", repo)
    assert verdict.action == "deny" and verdict.reason == "second hook says no"


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash for a shell-script hook")
def test_a_typical_bash_hook_works_unchanged(tmp_path: Path, repo: Path) -> None:
    script = tmp_path / "block-rm.sh"
    script.write_text(
        "#!/usr/bin/env bash\n"
        "input=$(cat)\n"
        'if printf "%s" "$input" | grep -q "rm -rf"; then\n'
        '  echo "Blocked: rm -rf is not allowed" >&2\n'
        "  exit 2\n"
        "fi\n"
        "exit 0\n"
    )
    script.chmod(0o755)
    engine = PolicyEngine.from_config({
        "hooks": [{"event": "pre_tool", "matcher": "Bash", "command": str(script)}],
        "approval_mode": "full-auto",
    })
    engine.pin_hooks(repo)
    blocked = engine.decide("run", "execute", {"command": "rm -rf build"}, False, repo, "s")
    assert (blocked.action, blocked.source) == ("deny", "hook")
    assert "rm -rf is not allowed" in blocked.reason
    fine = engine.decide("run", "execute", {"command": "pytest -q"}, False, repo, "s")
    assert fine.action == "allow"


def test_project_dir_is_in_the_hook_environment(hook_script: HookScript, repo: Path) -> None:
    cmd = hook_script(
        "import os\n"
        "ok = os.environ.get('CLAUDE_PROJECT_DIR') == os.getcwd() == os.environ['CODELOOP_PROJECT_DIR']\n"
        "sys.exit(0 if ok else 2)\n"
    )
    assert run_pinned([pre(cmd)], "pre_tool", "run", {"command": "ls"}, "s", repo).action is None


def test_a_detached_grandchild_holding_the_pipe_cannot_hang_the_policy(
        hook_script: HookScript, repo: Path, tmp_path: Path) -> None:
    pid_file = tmp_path / "grandchild.pid"
    cmd = hook_script(
        "import subprocess\n"
        "child = subprocess.Popen(['sleep', '30'], start_new_session=True)\n"
        f"open({str(pid_file)!r}, 'w').write(str(child.pid))\n"
        "print(json.dumps({'decision': 'approve'}))\n"
    )
    try:
        verdict = run_pinned([pre(cmd, timeout=1.0)], "pre_tool", "run", {"command": "ls"}, "s",
                            repo)
        assert verdict.action == "deny"
        assert "timed out" in verdict.reason
    finally:
        if pid_file.exists():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid_file.read_text()), signal.SIGKILL)
