"""Pre- and post-tool hooks: the user's own programs, given the call as JSON on stdin.

The protocol is Claude Code's, so existing hooks work unchanged: stdin carries
`hook_event_name` (PreToolUse/PostToolUse), `tool_name`, `tool_input`, `session_id`, `cwd`;
exit 0 proceeds (stdout may hold `{"decision": ...}` or
`{"hookSpecificOutput": {"permissionDecision": "allow"|"deny"|"ask", ...}}`), exit 2 blocks
with stderr as the reason. Unlike Claude Code, any other failure — another exit code, a
timeout, stdout that is not such JSON — is a deny: a broken guard must not open the gate.

Hooks run on the host, as the user, so they run in the user's own repository
(`CODELOOP_PROJECT_DIR`), never in the session's workspace that the model and sandboxed
commands write; the payload's `cwd` still says where the tool ran. A `HookGuard`
(hook_pins.py) refuses a hook whose files changed since the session started.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from codeloop.policy.hook_pins import HookGuard
from codeloop.policy.rules import PolicyConfigError

HookEvent = Literal["pre_tool", "post_tool"]
HookAction = Literal["allow", "ask", "deny"]

_EVENT_NAMES: dict[str, str] = {"pre_tool": "PreToolUse", "post_tool": "PostToolUse"}
# Our tool names as Claude Code calls them, so hooks matching "Bash" or "Edit|Write" still fire.
CLAUDE_NAMES = {
    "run": "Bash", "edit_file": "Edit", "write_file": "Write", "apply_patch": "Edit",
    "read_file": "Read", "list_files": "Glob", "grep": "Grep",
}
_INPUT_ALIASES = {
    "file_path": ("path", "file", "filename"),
    "old_string": ("old", "old_str", "old_text", "search"),
    "new_string": ("new", "new_str", "new_text", "replace"),
}
_MAX_HOOK_OUTPUT = 1 << 20
_DECISIONS: dict[str, HookAction] = {
    "allow": "allow", "approve": "allow", "deny": "deny", "block": "deny", "ask": "ask",
}


@dataclass(frozen=True)
class HookSpec:
    """One configured hook: which event, which tools (a regex), which command, how long."""

    event: HookEvent
    matcher: str
    command: str
    timeout: float = 10.0

    def __post_init__(self) -> None:
        if self.matcher in ("", "*"):
            return
        try:
            re.compile(self.matcher)
        except re.error as exc:
            raise PolicyConfigError(
                f"hook matcher {self.matcher!r} is not a valid regular expression: {exc}",
                "use a tool name like 'run', an alternation like 'edit_file|write_file', or '*'",
            ) from exc

    def matches(self, tool_name: str) -> bool:
        if self.matcher in ("", "*"):
            return True
        names = (tool_name, CLAUDE_NAMES.get(tool_name, tool_name))
        return any(re.fullmatch(self.matcher, n) for n in names)


@dataclass(frozen=True)
class HookVerdict:
    """What the hooks said: an action (None = no opinion) and why."""

    action: HookAction | None
    reason: str = ""
    hook: str = ""
    # `hookSpecificOutput.additionalContext` of post-tool hooks: a note for the model.
    context: str = ""


def hook_payload(event: HookEvent, name: str, args: dict[str, Any], session_id: str,
                 cwd: Path, output: str | None = None) -> dict[str, Any]:
    """The JSON a hook receives on stdin."""
    tool_input = dict(args)
    for alias, sources in _INPUT_ALIASES.items():
        if alias not in tool_input:
            for src in sources:
                if isinstance(args.get(src), str):
                    tool_input[alias] = args[src]
                    break
    payload: dict[str, Any] = {
        "session_id": session_id,
        "transcript_path": "",
        "cwd": str(cwd),
        "hook_event_name": _EVENT_NAMES[event],
        "tool_name": CLAUDE_NAMES.get(name, name),
        "tool_input": tool_input,
        "codeloop_tool_name": name,
        "codeloop_tool_input": args,
    }
    if output is not None:
        payload["tool_response"] = {"output": output}
    return payload


def run_hook(spec: HookSpec, payload: dict[str, Any], guard: HookGuard) -> HookVerdict:
    """Run one hook in the user's repository and read its answer; every failure is a deny,
    and so is a hook whose files are not as they were when the session started."""
    refusal = guard.refusal(spec.command)
    if refusal:
        return HookVerdict("deny", refusal, spec.command)
    project = guard.project_dir
    env = dict(os.environ)
    env["CLAUDE_PROJECT_DIR"] = env["CODELOOP_PROJECT_DIR"] = env["PWD"] = str(project)
    env["CODELOOP_SESSION_ID"] = str(payload.get("session_id", ""))
    data = json.dumps(payload, default=str).encode()
    try:
        proc = subprocess.Popen(
            spec.command, shell=True, cwd=project, env=env, start_new_session=True,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )
    except OSError as exc:
        return HookVerdict("deny", f"hook could not start: {exc}", spec.command)
    try:
        out, err = proc.communicate(data, timeout=spec.timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        return HookVerdict("deny", f"hook timed out after {spec.timeout:g}s", spec.command)
    stderr = err.decode(errors="replace").strip()[:2000]
    if proc.returncode == 2:
        return HookVerdict("deny", stderr or "blocked by hook (exit 2)", spec.command)
    if proc.returncode != 0:
        detail = f": {stderr}" if stderr else ""
        return HookVerdict("deny", f"hook failed with exit code {proc.returncode}{detail}",
                           spec.command)
    return _parse_answer(out, spec.command)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """Kill the hook's process group; a descendant that left the group may still hold the
    pipes open, so stop waiting for them after a moment instead of hanging on it."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    try:
        proc.communicate(timeout=2)
    except subprocess.TimeoutExpired:
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()
        proc.wait()


def _parse_answer(out: bytes, hook: str) -> HookVerdict:
    text = out.decode(errors="replace").strip()
    if not text:
        return HookVerdict(None, "", hook)
    if len(out) > _MAX_HOOK_OUTPUT:
        return HookVerdict("deny", "hook printed more than 1 MiB", hook)
    try:
        answer = json.loads(text)
    except json.JSONDecodeError:
        return HookVerdict("deny", f"hook printed something that is not JSON: {text[:200]!r}", hook)
    if not isinstance(answer, dict):
        return HookVerdict("deny", f"hook printed JSON that is not an object: {text[:200]!r}", hook)
    if answer.get("continue") is False:
        return HookVerdict("deny", str(answer.get("stopReason") or "hook asked to stop"), hook)
    specific = answer.get("hookSpecificOutput")
    if isinstance(specific, dict) and specific.get("updatedInput") is not None:
        # the hook meant a changed call to run; running the original instead would be wrong
        return HookVerdict("deny", "hook returned updatedInput, which codeloop does not apply; "
                           "change the call by denying with a reason instead", hook)
    raw: Any = None
    reason: Any = ""
    extra = specific.get("additionalContext") if isinstance(specific, dict) else None
    context = extra.strip() if isinstance(extra, str) else ""
    if isinstance(specific, dict) and "permissionDecision" in specific:
        raw, reason = specific["permissionDecision"], specific.get("permissionDecisionReason", "")
    elif answer.get("decision") is not None:
        raw, reason = answer["decision"], answer.get("reason", "")
    if raw is None:
        return HookVerdict(None, "", hook, context)
    action = _DECISIONS.get(raw) if isinstance(raw, str) else None
    if action is None:
        return HookVerdict("deny", f"hook answered an unknown decision {raw!r}", hook)
    return HookVerdict(action, str(reason or f"hook said {raw}"), hook, context)


def run_hooks(hooks: list[HookSpec], event: HookEvent, name: str, args: dict[str, Any],
              session_id: str, cwd: Path, output: str | None = None, *,
              guard: HookGuard | None) -> HookVerdict:
    """Run every matching hook in order: the first deny wins, then ask, then allow.

    `cwd` is where the tool ran (for the payload); the hooks run where `guard` says. Without
    a guard no hook runs: the call is denied (fail closed)."""
    matching = [h for h in hooks if h.event == event and h.matches(name)]
    if not matching:
        return HookVerdict(None)
    if guard is None:
        return HookVerdict("deny", "hooks are configured but not pinned to your repository "
                           "(a codeloop bug: report it)", matching[0].command)
    payload = hook_payload(event, name, args, session_id, cwd, output)
    verdicts: list[HookVerdict] = []
    for spec in matching:
        verdict = run_hook(spec, payload, guard)
        if verdict.action == "deny":
            return verdict
        verdicts.append(verdict)
    context = "\n".join(v.context for v in verdicts if v.context)
    for action in ("ask", "allow"):
        for verdict in verdicts:
            if verdict.action == action:
                return replace(verdict, context=context)
    return HookVerdict(None, context=context)
