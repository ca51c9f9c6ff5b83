"""Bytecode for sandboxed commands: the environment's modules compiled once, the workspace per
session, both under the session's `PYTHONPYCACHEPREFIX` (the sandbox shows it read-only).

With a prefix set Python ignores `__pycache__` directories, so without this every sandboxed
interpreter compiles the virtualenv's modules from source again; that costs time, and a
compile-time warning (an invalid escape in an old dependency) becomes an error under a test
suite's `filterwarnings = error` (flask 2.0 importing blinker 1.4).
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import TYPE_CHECKING

from codeloop.eval.swebench.procs import run_shell

if TYPE_CHECKING:
    from codeloop.eval.swebench.envs import TaskEnv
    from codeloop.workspace.base import Workspace

COMPILE_TIMEOUT_S = 1800.0
_MARKER = "pycache.json"


def environment_cache(env: TaskEnv) -> Path:
    """Where the environment's own modules are compiled: beside its virtualenv, not in it, so
    the project's sandboxed reinstall (which may write the virtualenv) cannot change it."""
    return env.root.absolute() / "pycache"


def compile_environment(env: TaskEnv) -> None:
    """Compile the virtualenv's `lib/` into `environment_cache(env)` once per environment.

    A file that does not compile (a Python 2 test module some packages ship) is left out and
    compiles, or fails, at import as before; the marker is written either way.
    """
    marker = env.root / _MARKER
    if marker.is_file():
        return
    cache = environment_cache(env)
    lib = env.root.absolute() / "venv" / "lib"
    environ = {**env.environ(), "PYTHONPYCACHEPREFIX": str(cache)}
    result = run_shell(f"{shlex.quote(str(env.bin_dir / 'python'))} -m compileall -q -j 0 "
                       f"{shlex.quote(str(lib))}", env.root, environ, COMPILE_TIMEOUT_S)
    marker.write_text(json.dumps({"exit": result.exit_code, "seconds": round(result.seconds, 1)}))


def share_environment_cache(env: TaskEnv, cache: Path) -> list[Path]:
    """Make the environment's compiled modules part of the session's cache `cache` (a link,
    nothing copied); returns the directories the sandbox must show read-only for it."""
    venv = env.root.absolute() / "venv"
    below = venv.relative_to(venv.anchor)
    compiled = environment_cache(env) / below
    if not compiled.is_dir():
        return []
    link = cache / below
    link.parent.mkdir(parents=True, exist_ok=True)
    if not link.is_symlink():
        link.symlink_to(compiled, target_is_directory=True)
    return [environment_cache(env)]


def precompile(workspace: Workspace, env: TaskEnv, cache: Path, timeout_s: float) -> None:
    """Byte-compile the workspace into `cache` (the sandbox's read-only PYTHONPYCACHEPREFIX).

    Verification commands write no bytecode (nothing may litter the workspace), so a suite
    that starts many interpreters (pytest's own tests) would otherwise compile the project
    again in each; a file the session edits falls back to compiling in memory.
    """
    environ = {**env.environ(), "PYTHONPYCACHEPREFIX": str(cache)}
    run_shell(f"{env.bin_dir / 'python'} -m compileall -q -j 0 {workspace.path}", cache,
              environ, timeout_s)
