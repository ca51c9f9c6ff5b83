"""The environment a command starts with: a fixed minimal set, never the host's."""

from __future__ import annotations

import os

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
