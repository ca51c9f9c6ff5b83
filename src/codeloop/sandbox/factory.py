"""Choosing the backend for a session."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from codeloop.sandbox.base import Sandbox
from codeloop.sandbox.bwrap_backend import BwrapSandbox
from codeloop.sandbox.egress import EgressProxy
from codeloop.sandbox.errors import SandboxUnavailable
from codeloop.sandbox.probe import probe
from codeloop.sandbox.subprocess_backend import SubprocessSandbox


def make_sandbox(no_sandbox: bool, workspace: Any, egress: EgressProxy | None = None,
                 ro_binds: Sequence[Path] = (), links: Mapping[Path, Path] | None = None) -> Sandbox:
    """bwrap when the probes pass; plain subprocesses only when the user said `--no-sandbox`.

    `egress`, a started `EgressProxy`, is the sandbox's only way out (allow-listed domains);
    `ro_binds` are host directories commands may read (a toolchain outside /usr); `links`,
    symlinks made inside the sandbox (path -> target).
    """
    if no_sandbox:
        return SubprocessSandbox()
    caps = probe()
    if not caps.isolation_available:
        failed = [
            f"{name}: {p.detail}"
            for name, p in (
                ("bwrap", caps.bwrap),
                ("seccomp", caps.seccomp),
                ("uid drop", caps.uid_drop),
                ("capabilities", caps.caps_dropped),
            )
            if not p.ok
        ]
        raise SandboxUnavailable(
            "commands cannot be isolated on this machine (" + "; ".join(failed) + ")",
            "see `codeloop doctor`; `--no-sandbox` runs commands unisolated and asks before each",
        )
    return BwrapSandbox(workspace, capabilities=caps, egress=egress, extra_ro_binds=ro_binds,
                        extra_links=links)


def choose_backend(setting: str) -> str:
    """"bwrap" or "docker" for a sandboxed session: bwrap where it works, else a reachable
    Docker engine; `setting` ("auto", "bwrap", "docker") can insist on one."""
    from codeloop.sandbox.docker_backend import docker_reachable

    if setting == "bwrap" or (setting == "auto" and probe().isolation_available):
        return "bwrap"
    reachable, detail = docker_reachable()
    if reachable:
        return "docker"
    if setting == "docker":
        raise SandboxUnavailable(f"no Docker engine is reachable ({detail})",
                                 "start Docker, or use sandbox_backend = \"bwrap\"")
    return "bwrap"  # make_sandbox then explains why bwrap cannot isolate here
