"""`codeloop policy check` and `codeloop policy scan`: try rules, hooks and the output
scanner by hand, without starting a session."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, cast, get_args

import typer
from rich.table import Table
from rich.text import Text

from codeloop.cli.options import HERE, repo_option
from codeloop.cli.safe_text import markup_safe, shown, shown_path, terminal_console
from codeloop.errors import CodeloopError

if TYPE_CHECKING:
    from codeloop.tools.base import Tier

policy_app = typer.Typer(help="Check permission rules, hooks and the output scanner.",
                         no_args_is_help=True)


def _usual_tier(tool: str) -> Tier:
    """The tier a tool's call has when --tier is not given."""
    from codeloop.policy.rules import EDIT_TOOLS, READ_TOOLS

    if tool == "run":
        return "execute"
    if tool in EDIT_TOOLS:
        return "write"
    if tool in READ_TOOLS:
        return "read"
    return "external" if tool.startswith("mcp__") else "network"


def _configured(repo: Path) -> dict[str, Any]:
    """The policy keys of the merged configuration; empty where config.py is not present."""
    try:
        config = importlib.import_module("codeloop.config")
    except ImportError:
        return {}
    settings = config.load_settings(repo)
    return {"permissions": dict(settings.permissions), "hooks": list(settings.hooks),
            "approval_mode": settings.approval_mode}


def _call_args(tool: str, subject: str) -> dict[str, Any]:
    from codeloop.policy.rules import EDIT_TOOLS, READ_TOOLS

    if tool == "run":
        return {"command": subject}
    if tool == "apply_patch":
        text = sys.stdin.read() if subject == "-" else Path(subject).read_text()
        return {"patch": text}
    if tool in EDIT_TOOLS | READ_TOOLS:
        return {"path": subject}
    return json.loads(subject) if subject.strip().startswith("{") else {}


@policy_app.command("check")
def check_command(
    subject: str = typer.Argument(..., help="The command (for run), a path, a patch file for "
                                  "apply_patch (- for stdin), or JSON arguments for other tools."),
    tool: str = typer.Option("run", "--tool", help="Tool name: run, edit_file, read_file, ..."),
    tier: str | None = typer.Option(None, "--tier", help="The tier: read, write, execute, network or "
                                    "external (default: the tool's usual tier; external for "
                                    "mcp__ tools)."),
    repo: Annotated[Path, repo_option("The repository the rules are relative to "
                                      "(default: the current directory).")] = HERE,
    mode: str | None = typer.Option(None, "--mode", help="Approval mode to assume."),
    allow: list[str] = typer.Option([], "--allow", metavar="RULE", help="Extra allow rule (repeatable)."),
    ask: list[str] = typer.Option([], "--ask", metavar="RULE", help="Extra ask rule (repeatable)."),
    deny: list[str] = typer.Option([], "--deny", metavar="RULE", help="Extra deny rule (repeatable)."),
    tainted: bool = typer.Option(False, "--tainted", help="As if untrusted content were in context."),
    no_config: bool = typer.Option(False, "--no-config", help="Ignore the configuration files."),
    no_hooks: bool = typer.Option(False, "--no-hooks", help="Do not run configured hooks."),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."),
) -> None:
    """Show how the policy would decide one tool call, and why."""
    from codeloop.policy.engine import PolicyEngine, approval_digest, remember_rule
    from codeloop.policy.network import command_network_reason
    from codeloop.policy.shell import analyse
    from codeloop.tools.base import Tier
    if not repo.is_dir():
        raise CodeloopError(f"{repo} is not a directory", "pass the repository as --repo PATH")
    data = {} if no_config else _configured(repo)
    perms = {k: list(v) for k, v in data.get("permissions", {}).items()}
    for kind, extra in (("allow", allow), ("ask", ask), ("deny", deny)):
        perms[kind] = [*perms.get(kind, []), *extra]
    engine = PolicyEngine.from_config({
        "permissions": perms,
        "hooks": [] if no_hooks else data.get("hooks", []),
        "approval_mode": mode or data.get("approval_mode", "ask"),
    })
    engine.pin_hooks(repo.resolve())
    args = _call_args(tool, subject)
    # An MCP tool's tier comes from its server's annotations, unknown here: the cautious one.
    call_tier = tier or _usual_tier(tool)
    if call_tier not in get_args(Tier):
        raise CodeloopError(f"unknown tier {call_tier!r}",
                            "use read, write, execute, network or external")
    decision = engine.decide(tool, cast(Tier, call_tier), args, tainted, repo.resolve(),
                             "policy-check")
    analysis = analyse(args["command"]) if tool == "run" else None
    commands = analysis.commands if analysis else []
    problems = analysis.problems if analysis else []
    remembered = remember_rule(tool, args)
    result = {
        "action": decision.action, "source": decision.source, "rule": decision.rule,
        "reason": decision.reason,
        "commands": [{"argv": list(c.argv), "network": command_network_reason(c),
                      "forms": [f"{f.what} {f.why}" for f in c.forms]} for c in commands],
        "problems": problems, "remember_rule": remembered, "digest": approval_digest(tool, args),
    }
    if as_json:
        typer.echo(json.dumps(result, indent=2))
        return
    console = terminal_console()
    if commands:
        table = Table("command", "network", "runs or changes more", title="commands found")
        for cmd in commands:
            table.add_row(shown(cmd.text), shown(command_network_reason(cmd) or ""),
                          shown("; ".join(f"{f.what} {f.why}" for f in cmd.forms)))
        console.print(table)
    for problem in problems:
        console.print(f"[yellow]cannot analyse:[/] {markup_safe(problem)}")
    colour = {"allow": "green", "ask": "yellow", "deny": "red"}[decision.action]
    console.print(f"[bold {colour}]{decision.action}[/] (source: {markup_safe(decision.source)}"
                  f"{', rule: ' + markup_safe(decision.rule) if decision.rule else ''})")
    console.print(Text("  ") + shown(decision.reason))
    console.print(Text("  remember as: ") + shown(remembered))


@policy_app.command("scan")
def scan_command(
    files: list[Path] = typer.Argument(..., help="Files to scan (- for standard input)."),
    as_json: bool = typer.Option(False, "--json", help="Print the findings as JSON."),
) -> None:
    """Scrub and scan text as if a tool had printed it; exit 1 if anything is flagged."""
    from codeloop.policy.engine import PolicyEngine
    engine = PolicyEngine.from_config({})
    results = []
    for path in files:
        text = sys.stdin.read() if str(path) == "-" else path.read_text(errors="replace")
        results.append((str(path), engine.post_tool("read_file", {"path": str(path)}, text,
                                                    cwd=Path.cwd())))
    if as_json:
        typer.echo(json.dumps([{"file": file, "untrusted": r.untrusted, "flags": r.flags}
                               for file, r in results], indent=2))
    else:
        console = terminal_console()
        for file, r in results:
            console.print(Text.assemble(shown_path(file), ": ", shown(", ".join(r.flags)) if r.flags
                                        else ("clean", "green")))
    if any(r.untrusted for _, r in results):
        sys.exit(1)


def register(app: typer.Typer) -> None:
    app.add_typer(policy_app, name="policy")
