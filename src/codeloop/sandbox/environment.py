"""The environment a command starts with: a fixed minimal set, never the host's."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from codeloop.sandbox.base import CommandResult, Limits, Sandbox

BASE_PATH = "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin"


def command_env(extra: dict[str, str] | None, home: str) -> dict[str, str]:
    """The variables a command sees: a minimal base plus what the caller passed explicitly."""
    env = {
        "PATH": BASE_PATH,
        "HOME": home,
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "TERM": "dumb",
        "PYTHONDONTWRITEBYTECODE": "1",
        "NO_COLOR": "1",
    }
    if extra:
        env.update(extra)
    return env


def launcher_env() -> dict[str, str]:
    """What the launcher process itself (bwrap, or the shell) is started with (pitfall 1)."""
    return {"PATH": BASE_PATH, "LANG": "C.UTF-8"}


def host_tmp() -> str:
    return os.environ.get("TMPDIR", "/tmp")


@dataclass
class Toolchain:
    """A toolchain outside the system directories that commands should find first.

    `ro_binds` become visible read-only inside the sandbox; `bin_dirs` lead PATH; `env` is
    added to every command (e.g. VIRTUAL_ENV); `links` are symlinks made inside the sandbox
    (path -> target), e.g. the repository's path leading to the workspace, where the
    absolute paths a virtualenv holds (script shebangs, editable installs) point.
    """

    ro_binds: list[Path] = field(default_factory=list)
    bin_dirs: list[Path] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    links: dict[Path, Path] = field(default_factory=dict)


class ToolchainSandbox:
    """A sandbox whose commands get the toolchain's PATH and variables."""

    def __init__(self, inner: Sandbox, toolchain: Toolchain) -> None:
        self.inner = inner
        self.toolchain = toolchain
        self.name = inner.name

    def run(self, command: str, cwd: Path, env: dict[str, str] | None = None,
            limits: Limits | None = None) -> CommandResult:
        merged = {**self.toolchain.env, **(env or {})}
        lead = ":".join(str(d) for d in self.toolchain.bin_dirs)
        if lead:
            merged["PATH"] = f"{lead}:{merged.get('PATH', BASE_PATH)}"
        return self.inner.run(command, cwd, merged, limits)
