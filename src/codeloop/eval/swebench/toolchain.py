"""The sandbox a task's commands run in: its virtualenv, interpreter and borrowed git objects."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from codeloop.eval.swebench.ccache import sandboxed_compiler_cache
from codeloop.eval.swebench.envs import REINSTALL_TIMEOUT_S, TaskEnv, offline_reinstall
from codeloop.sandbox.base import CommandResult, Limits
from codeloop.sandbox.bwrap_backend import BwrapSandbox
from codeloop.sandbox.environment import Toolchain, ToolchainSandbox
from codeloop.verify.pyvenv import SYSTEM_DIRS, parse_pyvenv, under_any
from codeloop.workspace.base import Workspace


def task_toolchain(env: TaskEnv, repo: Path) -> Toolchain:
    """The task's virtualenv for sandboxed commands: it, its base interpreter and the mirror
    objects the checkout borrows (git needs them; version files come from `git describe`)."""
    venv = env.bin_dir.parent
    binds = [venv, *_borrowed_objects(repo)]
    home = _venv_home(venv)
    # A pyenv or uv interpreter lives outside the system directories the sandbox shows.
    if home is not None and not under_any(home, SYSTEM_DIRS):
        binds.append(home.parent)
    return Toolchain(ro_binds=binds, bin_dirs=[env.bin_dir], env={"VIRTUAL_ENV": str(venv)})


def _borrowed_objects(repo: Path) -> list[Path]:
    alternates = repo / ".git" / "objects" / "info" / "alternates"
    if not alternates.is_file():
        return []
    return [Path(line) for line in alternates.read_text("utf-8").splitlines()
            if line.startswith("/") and Path(line).is_dir()]


def _venv_home(venv: Path) -> Path | None:
    cfg = venv / "pyvenv.cfg"
    home = parse_pyvenv(cfg.read_text("utf-8")).home if cfg.is_file() else None
    return Path(os.path.realpath(home)) if home else None


def task_sandbox(env: TaskEnv, repo: Path, *, workspace: Workspace | None = None,
                 writable: Sequence[Path] = (), readable: Sequence[Path] = (),
                 overlaid: Mapping[Path, Path] | None = None) -> ToolchainSandbox:
    """bwrap over `workspace` (or over `repo`, its writes thrown away) with the task's
    toolchain read-only but for `writable` and for `overlaid` (directory -> the layer that
    takes its writes); raises SandboxUnavailable where bwrap cannot isolate."""
    toolchain = task_toolchain(env, repo)
    shadowed = [*writable, *(overlaid or {})]
    inner = BwrapSandbox(
        workspace, extra_rw_binds=list(writable), extra_overlays=overlaid,
        extra_ro_binds=[b for b in toolchain.ro_binds if b not in shadowed] + list(readable))
    return ToolchainSandbox(inner, toolchain)


@dataclass
class Reinstall:
    """The offline reinstall of a checkout: its command, pip's settings and what it reads."""

    command: str
    env: dict[str, str]
    readable: list[Path]
    cache_dir: Path | None

    def run(self, box: ToolchainSandbox, repo: Path) -> CommandResult:
        return box.run(self.command, repo, env=self.env,
                       limits=Limits(timeout_s=REINSTALL_TIMEOUT_S, max_output_bytes=200_000))


def reinstall_plan(env: TaskEnv, repo: Path) -> Reinstall | None:
    """How to reinstall `repo` into the environment in the sandbox; None when the spec
    installs nothing."""
    command = offline_reinstall(env.spec.install)
    if not command:
        return None
    # pip's settings as the environment was built with (the constraints file among them),
    # and setuptools' editable mode for this project.
    pip_env = {k: v for k, v in env.reinstall_environ(repo).items()
               if k.startswith(("PIP_", "SETUPTOOLS_"))}
    files = [Path(v) for k, v in pip_env.items() if k == "PIP_CONSTRAINT" and Path(v).is_file()]
    # C extensions (astropy) compile through the host's ccache, as the judge's reinstalls do.
    cache_env, cache_dir = sandboxed_compiler_cache(repo)
    return Reinstall(command, pip_env | cache_env, files, cache_dir)


def reinstall_sandboxed(env: TaskEnv, repo: Path, workspace: Workspace | None = None
                        ) -> CommandResult | None:
    """Reinstall the project from `repo` (trusted code) in the sandbox, only the virtualenv
    (and the compiler cache) writable; None when the spec installs nothing."""
    plan = reinstall_plan(env, repo)
    if plan is None:
        return None
    venv = env.bin_dir.parent
    box = task_sandbox(env, repo, workspace=workspace,
                       writable=[venv, *([plan.cache_dir] if plan.cache_dir else [])],
                       readable=plan.readable)
    return plan.run(box, repo)
