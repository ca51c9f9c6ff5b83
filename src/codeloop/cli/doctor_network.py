"""`codeloop doctor`'s network section: whether sessions get a network, and to which hosts."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console

from codeloop.cli.safe_text import markup_safe
from codeloop.errors import ConfigError

if TYPE_CHECKING:
    from codeloop.config import Settings
    from codeloop.sandbox.probe import Capabilities


def network_report(caps: Capabilities, repo: Path | None) -> dict[str, Any]:
    """The network sessions get with the config as it stands (for `repo`, when named)."""
    from codeloop.config import load_settings
    try:
        settings = load_settings(repo)
    except ConfigError as exc:
        return {"mode": "unknown", "allow": [], "detail": str(exc)}
    return _report(settings, caps)


def _report(settings: Settings, caps: Capabilities) -> dict[str, Any]:
    allow = list(settings.network.allow)
    if not settings.network.on:
        return {"mode": "off", "allow": [], "detail": "commands have no network; "
                "[network] allow = [...] in the config lets them reach those hosts"}
    if not settings.sandbox:
        return {"mode": "host", "allow": allow, "detail": "without the sandbox commands use "
                "the host's network (and each is asked); the allow-list needs the sandbox"}
    if settings.sandbox_backend == "docker" or not caps.isolation_available:
        return {"mode": "off", "allow": allow, "detail": "the allow-list applies under bwrap "
                "only; under Docker commands have no network"}
    return {"mode": "proxy", "allow": allow, "detail": "only through the egress proxy: the "
            "hosts listed, by name, to public addresses; the user may allow more in ask mode"}


def print_network(report: dict[str, Any], console: Console) -> None:
    colour = {"proxy": "green", "off": "yellow"}.get(report["mode"], "red")
    allow = ", ".join(report["allow"]) or "none"
    console.print(f"network: [{colour}]{report['mode']}[/] - {markup_safe(report['detail'])}")
    if report["mode"] == "proxy":
        console.print(f"  allowed hosts: {markup_safe(allow)}")
