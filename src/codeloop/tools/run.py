"""The run tool: a shell command in the session's sandbox, in the workspace."""

from __future__ import annotations

from dataclasses import replace

from pydantic import Field

from codeloop.events import CommandRan
from codeloop.policy.network import network_reason
from codeloop.policy.shell import analyse
from codeloop.session.network import NETWORK, SessionNetwork
from codeloop.tools.base import Observation, Tool, ToolArgs, ToolContext


def _offline_note(command: str) -> str:
    """Why a failed command that looks like network access may have failed."""
    reason = network_reason(analyse(command))
    if reason is None:
        return ""
    return (f"[network] this session has no network ({reason}): the user can allow hosts "
            "with [network] allow in their config.")


# Which setting raises the limit a command was stopped by (the reasons are the sandbox's).
_RAISED_BY = (("memory limit", "[limits] memory_mb"), ("process limit", "[limits] max_processes"),
              ("CPU time limit", "budgets.command_timeout_s"))


def _limit_note(reason: str | None, timed_out: bool, session_limit: bool) -> str:
    """Which setting of the user's config would give the command more room, if any."""
    setting = "budgets.command_timeout_s" if timed_out and session_limit else next(
        (key for prefix, key in _RAISED_BY if reason and reason.startswith(prefix)), None)
    if setting is None:
        return ""
    return (f"[limits] this is the session's limit: if the command needs more, the user can "
            f"raise {setting} in their config.")


class RunArgs(ToolArgs):
    command: str = Field(description="A shell command, run from the repository root.")
    timeout: float | None = Field(None, gt=0, description="Seconds before the command is killed.")


class RunTool(Tool):
    name = "run"
    description = (
        "Run a shell command in the sandbox from the repository root. No network, unless the "
        "user allowed hosts: then only those, through a proxy (HTTP(S)_PROXY are set), and "
        "refused requests are listed after the output. Returns the exit code and output; "
        "long output keeps its head and tail."
    )
    args_model = RunArgs
    tier = "execute"

    def run(self, args: RunArgs, ctx: ToolContext) -> Observation:
        limits = ctx.limits
        if args.timeout is not None:
            limits = replace(limits, timeout_s=min(args.timeout, limits.timeout_s))
        result = ctx.sandbox.run(args.command, cwd=ctx.workspace.path, env=None, limits=limits)
        ctx.emit(CommandRan(command=args.command, exit_code=result.exit_code,
                            duration_ms=result.duration_ms, timed_out=result.timed_out,
                            killed_reason=result.killed_reason, sandbox=result.backend))
        network = ctx.services.get(NETWORK)
        note = ""
        if isinstance(network, SessionNetwork):
            events, note = network.take_events()
            for event in events:
                ctx.emit(event)
        elif result.exit_code != 0 and ctx.sandbox.name != "subprocess":
            note = _offline_note(args.command)
        limit = _limit_note(result.killed_reason, result.timed_out,
                            limits.timeout_s >= ctx.limits.timeout_s)
        note = "\n".join(n for n in (note, limit) if n)
        if result.timed_out:
            status = f"timed out after {limits.timeout_s:g}s (process tree killed)"
        elif result.killed_reason:
            status = f"killed: {result.killed_reason}"
        else:
            status = f"exit code {result.exit_code}"
        return Observation(
            ok=result.exit_code == 0 and not result.timed_out,
            output=f"[{status}]\n{result.output}".rstrip() + (f"\n{note}" if note else ""),
            truncated=result.truncated,
            data={"exit_code": result.exit_code, "timed_out": result.timed_out},
        )
