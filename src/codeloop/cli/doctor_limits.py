"""`codeloop doctor`'s limits line: what each sandboxed command may use, and from where."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

from rich.console import Console

from codeloop.cli.safe_text import markup_safe
from codeloop.errors import ConfigError

_SHOWN = ("timeout_s", "memory_mb", "max_processes", "max_open_files", "max_file_mb")


def limits_report(repo: Path | None) -> dict[str, Any]:
    """The limits in force for the config as it stands (for `repo`, when named), and which
    of them `[limits]` set; `error` instead when the config does not load."""
    from codeloop.config import load_settings
    from codeloop.session.setup import command_limits
    try:
        settings = load_settings(repo)
    except ConfigError as exc:
        return {"error": str(exc)}
    limits = asdict(command_limits(settings))
    return {**{name: limits[name] for name in _SHOWN}, "set": sorted(settings.limits.given())}


def print_limits(report: dict[str, Any], console: Console) -> None:
    if "error" in report:
        console.print(f"command limits: [red]unknown[/] - {markup_safe(report['error'])}")
        return
    source = (f"[limits] sets {', '.join(report['set'])}" if report["set"] else
              "defaults; [limits] in the config changes them")
    console.print(
        f"command limits: {report['timeout_s']:g} s, {report['memory_mb']} MB, "
        f"{report['max_processes']} tasks, {report['max_open_files']} open files, "
        f"{report['max_file_mb']} MB per file ({markup_safe(source)})")
