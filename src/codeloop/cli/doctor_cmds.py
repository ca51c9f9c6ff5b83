"""`codeloop doctor`: which isolation this machine provides, what is in force, which grep."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.table import Table

from codeloop.cli.options import repo_option
from codeloop.cli.safe_text import shown, terminal_console

if TYPE_CHECKING:
    from codeloop.sandbox.probe import Capabilities, Probe


def _rows(caps: Capabilities) -> list[tuple[str, Probe]]:
    return [
        ("bwrap", caps.bwrap),
        ("user namespaces", caps.user_namespaces),
        ("overlay workspace mounts", caps.overlay),
        ("seccomp deny-list", caps.seccomp),
        ("drop from root", caps.uid_drop),
        ("capabilities dropped", caps.caps_dropped),
        ("idmapped workspace (root)", caps.workspace_idmap),
        ("Landlock", caps.landlock),
        ("cgroups", caps.cgroups),
        ("whole-command memory limit", caps.memory_limit),
    ]


def _grep() -> dict[str, str | None]:
    from codeloop.index.ripgrep import find_ripgrep, grep_engine
    rg = find_ripgrep()
    return {"engine": "ripgrep" if rg else "python", "path": rg.path if rg else None,
            "version": rg.version if rg else None, "detail": grep_engine()}


def _print(caps: Capabilities, console: Console) -> None:
    from codeloop.index.ripgrep import find_ripgrep, grep_engine
    from codeloop.sandbox.docker_backend import docker_reachable
    table = Table(title="codeloop sandbox capabilities")
    table.add_column("capability")
    table.add_column("status")
    table.add_column("detail")
    for name, p in _rows(caps):
        table.add_row(name, "[green]ok[/]" if p.ok else "[red]no[/]", shown(p.detail))
    reachable, detail = docker_reachable()
    table.add_row("Docker engine", "[green]ok[/]" if reachable else "[red]no[/]",
                  shown(f"{detail} (backend used when bwrap cannot isolate, or when configured)"))
    table.add_row("ripgrep (grep, search)", "[green]ok[/]" if find_ripgrep() else "[red]no[/]",
                  shown(grep_engine()))
    console.print(table)
    version = caps.bwrap_version or "none"
    console.print(f"bwrap {version} at {caps.bwrap_path or '-'}; running as root: {caps.running_as_root}")
    if caps.isolation_available:
        memory = caps.cgroup_plan.mechanism if caps.cgroup_plan else "RSS polling"
        console.print(
            "[green]in force:[/] bwrap per command (all namespaces, its own network: none, or "
            "the egress proxy), seccomp "
            "deny-list, no capabilities, rlimits, whole-command memory limit by "
            f"{memory}, minimal read-only system, sized /tmp and /dev/shm"
            + (", overlay workspace" if caps.overlay.ok else ", workspace as a private copy")
        )
    else:
        console.print(
            "[red]isolation unavailable:[/] commands run only with --no-sandbox, each one asked"
        )


def doctor(
    json_out: bool = typer.Option(False, "--json", help="Print the probes as JSON."),
    repo: Annotated[Path | None, repo_option(
        "Also say which interpreter and test command verification uses for this repository, "
        "and why.")] = None,
) -> None:
    """Probe the sandbox capabilities of this machine and show what is in force and which grep."""
    from codeloop.cli.doctor_limits import limits_report, print_limits
    from codeloop.cli.doctor_network import network_report, print_network
    from codeloop.cli.doctor_project import print_project, project_report
    from codeloop.sandbox.docker_backend import docker_reachable
    from codeloop.sandbox.probe import probe
    caps = probe()
    project = project_report(repo) if repo is not None else None
    network = network_report(caps, repo)
    limits = limits_report(repo)
    if json_out:
        reachable, detail = docker_reachable()
        data = {**caps.to_dict(), "docker": {"ok": reachable, "detail": detail}, "grep": _grep(),
                "network": network, "command_limits": limits, **({"project": project} if project is not None else {})}
        typer.echo(json.dumps(data, indent=2))
        return
    console = terminal_console()
    _print(caps, console)
    print_network(network, console)
    print_limits(limits, console)
    if project is not None:
        print_project(project, console)


def register(app: typer.Typer) -> None:
    app.command("doctor")(doctor)
