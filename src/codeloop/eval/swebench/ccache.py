"""ccache for the project reinstalls of SWE-bench checkouts: each judged checkout compiles a
C-extension project (astropy) again from identical sources, and the cache makes those hits."""

from __future__ import annotations

import os
from pathlib import Path

from codeloop.sandbox.environment import BASE_PATH

# Debian's ccache package: `gcc`, `cc`, ... links that compile through the cache.
CCACHE_MASQUERADE = Path("/usr/lib/ccache")


def with_compiler_cache(path: str, env: dict[str, str],
                        masquerade: Path = CCACHE_MASQUERADE) -> str:
    """`path` with ccache's compiler links first when ccache is installed.

    Each judged checkout reinstalls the project, which for C-extension projects (astropy)
    means compiling it again from identical sources; ccache turns those into cache hits.
    Where the checkout is known, paths inside it are rewritten relative to it
    (`compiler_cache_basedir`), so checkouts in different directories share entries.
    """
    if not (masquerade / "gcc").exists():
        return path
    env["CCACHE_NOHASHDIR"] = "1"
    return f"{masquerade}:{path}"


def compiler_cache_basedir(env: dict[str, str], project: Path) -> dict[str, str]:
    """`env` with ccache rewriting paths inside `project` relative to it, when ccache is used.

    Only the project's own paths: a wider base (the temp dir) would rewrite the virtualenv's
    include paths relative to the checkout's depth, which differs between a judged checkout
    and a session's workspace, and no compile would hit the other's entries.
    """
    return {**env, "CCACHE_BASEDIR": str(project)} if "CCACHE_NOHASHDIR" in env else env


def sandboxed_compiler_cache(project: Path, masquerade: Path = CCACHE_MASQUERADE
                             ) -> tuple[dict[str, str], Path | None]:
    """ccache for reinstalling `project` inside the sandbox: its variables, and the cache
    directory the sandbox must bind writable (None, and no variables, without ccache)."""
    if not (masquerade / "gcc").exists():
        return {}, None
    env: dict[str, str] = {}
    env["PATH"] = with_compiler_cache(BASE_PATH, env, masquerade)
    env = compiler_cache_basedir(env, project)
    xdg = os.environ.get("XDG_CACHE_HOME")
    cache_dir = Path(os.environ.get("CCACHE_DIR")
                     or (Path(xdg) if xdg else Path.home() / ".cache") / "ccache")
    cache_dir.mkdir(parents=True, exist_ok=True)
    env["CCACHE_DIR"] = str(cache_dir)
    return env, cache_dir
