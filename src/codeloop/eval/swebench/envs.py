"""Cached virtualenvs per (repository, version), built once from PyPI and reused offline.

The recipe follows the SWE-bench harness: the spec's Python, the repository's pinned
requirements at the environment-setup commit (or the spec's package list), the spec's
pinned pip packages, the pre-install edits, then the install command. Each run then
reinstalls only the repository itself (no dependencies, no network) into its fresh checkout.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shlex
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from codeloop.errors import CodeloopError
from codeloop.eval.swebench.build_requires import build_requires as build_requires_of
from codeloop.eval.swebench.build_requires import editable_mode_environ
from codeloop.eval.swebench.bytecode import compile_environment
from codeloop.eval.swebench.ccache import compiler_cache_basedir, with_compiler_cache
from codeloop.eval.swebench.checkout import git
from codeloop.eval.swebench.condayml import CondaYamlError, pip_requirements
from codeloop.eval.swebench.interpreters import Interpreter, find_interpreter
from codeloop.eval.swebench.procs import ShellResult, run_shell
from codeloop.eval.swebench.specs import EnvSpec
from codeloop.verify.commands import sympy_seeded
from codeloop.verify.settings import TEST_SEED

BUILD_TIMEOUT_S = 1800.0
REINSTALL_TIMEOUT_S = 600.0
# The harness built its environments before NumPy 2 (June 2024); the code under test assumes
# the NumPy 1 API (np.Inf, np.float_, ...). pytest-cov 5+ uses pluggy's `wrapper=True`
# hooks, which the old pytest a version pins (sphinx 3.x: 5.3) rejects at start-up, so every
# test fails. docutils 0.21 (April 2024) gives image nodes a line number, which sphinx's
# linkcheck output then reports (sphinx-8579's test expects 0). Applied to every pip call
# through PIP_CONSTRAINT.
_CONSTRAINTS = Path(__file__).with_name("constraints.txt")
# Lines of a requirements file the harness leaves out: the project itself and comments.
_SKIPPED_REQ_PREFIXES = ("-e .", "#", ".[test")
# The tools a new virtualenv is upgraded to, per Python version where the newest releases
# dropped it. This machine's local index lists `wheel` without its Requires-Python, so
# an old Python's pip picks a wheel release that refuses to install (pydicom 1.x, astropy 1.3).
_BOOTSTRAP = ("pip<25", "setuptools<71", "wheel")
_BOOTSTRAP_FOR_PYTHON: dict[str, tuple[str, ...]] = {
    "3.6": ("pip<22", "setuptools<60", "wheel<0.38"),
    "3.8": ("pip<25", "setuptools<71", "wheel<0.46"),
}
# Git submodules a checkout from the mirror lacks, and the PyPI releases installed in their
# place. astropy's setup.py imports `astropy_helpers` from its submodule: ah_bootstrap tries
# to clone it from GitHub (unreachable here), then takes an installed copy. The releases
# are the nearest to the submodule commit at each version's environment-setup commit.
_SUBMODULE_RELEASES: dict[tuple[str, str], tuple[str, ...]] = {
    ("astropy/astropy", "1.3"): ("astropy-helpers>=3.0,<3.2",),
    ("astropy/astropy", "3.0"): ("astropy-helpers>=3.2,<4",),
}
# Packages a repository imports that its pins no longer bring in: docutils 0.21+ stopped
# shipping the top-level `roman` module that sphinx 3.x's LaTeX builder imports.
_MISSING_DEPENDENCIES: dict[str, tuple[str, ...]] = {"sphinx-doc/sphinx": ("roman",)}
# Data files tests download at run time, installed from PyPI at build time instead: the
# sandbox has no network, and pydicom's download helper retries each file for 21 s (its
# tests then time out). pydicom finds `pydicom-data` through its external-sources hook.
# Optional: without it those tests fail before and after an edit alike.
_TEST_DATA: dict[str, tuple[str, ...]] = {"pydicom/pydicom": ("pydicom-data",)}


class EnvUnavailable(CodeloopError):
    """The test environment for a task cannot be built on this machine; `reason` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(
            f"environment unavailable: {reason}",
            "see the build log in the environment cache; --rebuild-envs retries",
        )
        self.reason = reason


def default_cache_dir() -> Path:
    """`$CODELOOP_CACHE_DIR/swebench-envs`, else `~/.cache/codeloop/swebench-envs`."""
    base = os.environ.get("CODELOOP_CACHE_DIR")
    root = Path(base) if base else Path.home() / ".cache" / "codeloop"
    return root / "swebench-envs"


def base_environ(extra_path: Path | None = None) -> dict[str, str]:
    """A small environment for builds and test runs: no user site, wide terminal, no prompts."""
    keep = ("HOME", "LANG", "LC_ALL", "TMPDIR", "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL",
            "PIP_TRUSTED_HOST", "PIP_CERT", "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE")
    env = {k: v for k, v in os.environ.items() if k in keep}
    path = with_compiler_cache("/usr/local/bin:/usr/bin:/bin", env)
    env["PATH"] = f"{extra_path}:{path}" if extra_path else path
    env.update({
        "PYTHONNOUSERSITE": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INPUT": "1",
        "COLUMNS": "400", "LANG": env.get("LANG", "C.UTF-8"), "PYTHONIOENCODING": "utf-8",
        "PIP_CONSTRAINT": str(_CONSTRAINTS),
        # The judge's verdict on a diff must not depend on the run: sympy's older assumptions
        # recurse for some hash seeds (sympy-11384's FAIL_TO_PASS test passes or not by seed).
        "PYTHONHASHSEED": TEST_SEED,
    })
    return env


@dataclass
class TaskEnv:
    """A built environment: its virtualenv and the recipe it was built from."""

    spec: EnvSpec
    root: Path
    interpreter: str

    @property
    def bin_dir(self) -> Path:
        return self.root / "venv" / "bin"

    @property
    def test_cmd(self) -> str:
        """The spec's test command, made to run from this virtualenv (sympy's with one seed)."""
        command = tox_current_env_in_venv(self.spec.test_cmd)
        return sympy_seeded(command) if self.spec.runner == "sympy" else command

    @property
    def verifier_test_cmd(self) -> str:
        """The test command for the session's verifier: where tox only wraps pytest (sphinx),
        pytest itself, so the verifier can pass it the task's tests and read its JUnit report
        (tox's text output gives it no per-test results to compare); sympy's runner with its
        cache on (the judge keeps the harness's `-C`: sympy-11870's test file ran over 7 min
        each time without the cache, 3 s with it)."""
        if _TOX_CURRENT_ENV.search(self.spec.test_cmd):
            return "python -m pytest -rA"
        return _SYMPY_NO_CACHE.sub("", self.test_cmd) if self.spec.runner == "sympy" else self.test_cmd

    def environ(self) -> dict[str, str]:
        env = base_environ(self.bin_dir)
        env["VIRTUAL_ENV"] = str(self.root / "venv")
        return env

    def reinstall_environ(self, repo: Path) -> dict[str, str]:
        """The environment for building or reinstalling the checkout `repo` in this virtualenv."""
        return compiler_cache_basedir({**self.environ(), **editable_mode_environ(repo)}, repo)

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        """Hold the environment alone: the project is reinstalled into it for each checkout,
        so two evaluations must not use one environment at the same time."""
        with (self.root / "use.lock").open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            yield

    def prepare(self, repo: Path, *, edits: bool = True) -> ShellResult:
        """Make `repo` runnable: pre-install edits (on a fresh checkout), then reinstall it alone."""
        steps = [c for c in self.spec.pre_install if edits and not _needs_system_packages(c)]
        reinstall = offline_reinstall(self.spec.install)
        if reinstall:
            steps.append(reinstall)
        if not steps:
            return ShellResult(0, "", 0.0)
        return run_shell(" && ".join(steps), repo, self.reinstall_environ(repo), REINSTALL_TIMEOUT_S)


def offline_reinstall(install: str) -> str:
    """The spec's install command, building from the checkout with the environment's backend.

    Dependencies the environment already satisfies are not fetched again, so this runs
    offline; one a later commit added is fetched once and then stays in the environment.
    """
    if "pip install" not in install:
        return install
    return install.replace("pip install", "pip install --no-build-isolation", 1)


_TOX_CURRENT_ENV = re.compile(r"\btox --current-env -e\s*([\w.-]+)")
_SYMPY_NO_CACHE = re.compile(r" (?:-C|--no-cache)(?= |$)")


def tox_current_env_in_venv(test_cmd: str) -> str:
    """`tox --current-env` (sphinx) made to work from a virtualenv rather than conda.

    tox-current-env links `.tox/<env>/bin/python` to the running interpreter; beside that
    link there is no `pyvenv.cfg`, so it starts as the bare base Python (no pytest, no
    project). With `.tox/<env>` linked to the virtualenv itself the plugin finds its python
    there, and that python its `pyvenv.cfg`.
    """
    match = _TOX_CURRENT_ENV.search(test_cmd)
    if match is None:
        return test_cmd
    link = shlex.quote(f".tox/{match.group(1)}")
    return f'mkdir -p .tox && ln -sfn "$VIRTUAL_ENV" {link} && {test_cmd}'


def bootstrap_command(python: str) -> str:
    """Upgrade a new virtualenv's pip, setuptools and wheel to releases `python` can run."""
    tools = _BOOTSTRAP_FOR_PYTHON.get(python, _BOOTSTRAP)
    return "python -m pip install -U " + " ".join(shlex.quote(t) for t in tools)


def _needs_system_packages(command: str) -> bool:
    return "apt-get" in command


class EnvBuilder:
    """Builds or finds the environment for a spec under `cache_dir/<repo>-<version>`."""

    def __init__(self, cache_dir: Path, *, rebuild: bool = False) -> None:
        self.cache_dir = cache_dir
        self.rebuild = rebuild
        self._checked: set[str] = set()

    def is_cached(self, spec: EnvSpec) -> bool:
        """Whether a finished build (or a recorded failure) exists, so no checkout is needed."""
        if self.rebuild and spec.key not in self._checked:
            return False
        root = self.cache_dir / spec.key
        return (root / "ready.json").is_file() or (root / "failed.json").is_file()

    def get(self, spec: EnvSpec, mirror: Path, setup_commit: str, repo: Path) -> TaskEnv:
        """The environment for `spec`, building it in `repo` (a fresh checkout) when missing."""
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        # Two evaluations sharing a cache must not build (or delete) the same env at once.
        with (self.cache_dir / f"{spec.key}.lock").open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            return self._get_locked(spec, mirror, setup_commit, repo)

    def _get_locked(self, spec: EnvSpec, mirror: Path, setup_commit: str, repo: Path
                    ) -> TaskEnv:
        root = self.cache_dir / spec.key
        if self.rebuild and spec.key not in self._checked:
            shutil.rmtree(root, ignore_errors=True)
        self._checked.add(spec.key)
        ready, failed = root / "ready.json", root / "failed.json"
        if ready.is_file():
            env = TaskEnv(spec, root, json.loads(ready.read_text())["interpreter"])
            compile_environment(env)  # environments built before their bytecode was kept
            return env
        if failed.is_file():
            raise EnvUnavailable(json.loads(failed.read_text())["reason"])
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True)
        start = time.monotonic()
        try:
            interp = self._build(spec, root, mirror, setup_commit, repo)
        except EnvUnavailable as exc:
            failed.write_text(json.dumps({"reason": exc.reason}))
            raise
        described = f"{interp.implementation} {interp.version} ({interp.path})"
        ready.write_text(json.dumps({"interpreter": described, "spec": spec.key,
                                     "seconds": round(time.monotonic() - start, 1)}))
        env = TaskEnv(spec, root, described)
        compile_environment(env)
        return env

    def _build(
        self, spec: EnvSpec, root: Path, mirror: Path, setup_commit: str, repo: Path,
    ) -> Interpreter:
        interp = find_interpreter(spec.python)
        if interp is None:
            raise EnvUnavailable(
                f"no Python {spec.python} here (looked for python{spec.python} on PATH, in "
                "pyenv, and a pypy3 of that version)"
            )
        log = (root / "build.log").open("w", encoding="utf-8")
        env = TaskEnv(spec, root, "")
        try:
            self._step(log, f"{shlex.quote(str(interp.path))} -m venv {root / 'venv'}",
                       repo, base_environ(), "create the virtualenv")
            self._step(log, bootstrap_command(interp.version), repo, env.environ(),
                       "bootstrap pip")
            for step, label in self._recipe(spec, root, mirror, setup_commit, repo):
                self._step(log, step, repo, env.reinstall_environ(repo), label)
        finally:
            log.close()
        return interp

    def _recipe(
        self, spec: EnvSpec, root: Path, mirror: Path, setup_commit: str, repo: Path,
    ) -> list[tuple[str, str]]:
        steps: list[tuple[str, str]] = []
        pins = root / "pins.txt"
        pins.write_text("".join(f"{p}\n" for p in spec.pip_packages if "==" in p))
        if spec.packages == "requirements.txt":
            reqs = root / "requirements.txt"
            reqs.write_text(_requirements_at(mirror, setup_commit, spec.requirements_paths))
            steps.append((_install_each(reqs), "install the pinned requirements"))
        elif spec.packages == "environment.yml":
            reqs = root / "environment-requirements.txt"
            reqs.write_text("\n".join(_conda_requirements_at(
                mirror, setup_commit, spec.requirements_paths)) + "\n")
            # The harness creates the conda environment, then pins `pip_packages` over it;
            # resolving the unpinned conda list against those pins keeps them compatible.
            steps.append((_install_each(reqs, f"-c {pins}"),
                          "install the conda environment's packages from PyPI"))
        elif spec.packages:
            steps.append((f"python -m pip install {spec.packages}", "install the packages"))
        if spec.pip_packages:
            listed = " ".join(shlex.quote(p) for p in spec.pip_packages)
            steps.append((f"python -m pip install {listed}", "install the pinned pip packages"))
        for command in spec.pre_install:
            if not _needs_system_packages(command):
                steps.append((command, "pre-install edit"))
        standins = _SUBMODULE_RELEASES.get((spec.repo, spec.version), ())
        if standins:
            listed = " ".join(shlex.quote(p) for p in standins)
            steps.append((f"python -m pip install {listed}",
                          "install releases in place of missing git submodules"))
        if spec.install:
            steps.append((spec.install, "install the project"))
        build_requires = build_requires_of(repo)
        if build_requires:
            backend = " ".join(shlex.quote(r) for r in build_requires)
            # Under the spec's pins: the backend's own requirements must not replace them
            # (setuptools-scm 10 would upgrade xarray's pinned packaging).
            steps.append((f"python -m pip install -c {pins} {backend}",
                          "install the build backend"))
        missing = _MISSING_DEPENDENCIES.get(spec.repo, ())
        if missing:
            steps.append((f"python -m pip install {' '.join(missing)}",
                          "install dependencies the pins no longer bring in"))
        data = _TEST_DATA.get(spec.repo, ())
        if data:
            steps.append((f"python -m pip install {' '.join(data)} || echo 'test data not installed:"
                          " tests that download it will fail for want of the network'",
                          "install the data files the tests would download"))
        if spec.runner == "pytest":
            steps.append(("python -c 'import pytest' || python -m pip install pytest",
                          "make sure pytest is there"))
        return steps

    @staticmethod
    def _step(log: TextIO, command: str, cwd: Path, environ: dict[str, str], label: str) -> None:
        result = run_shell(command, cwd, environ, BUILD_TIMEOUT_S)
        log.write(f"$ {command}\n{result.output}\n[exit {result.exit_code}, {result.seconds:.1f}s]\n\n")
        log.flush()
        if not result.ok:
            last = result.tail(3).replace("\n", " | ")
            raise EnvUnavailable(f"{label} failed: {last[-400:]}")


def _install_each(reqs: Path, options: str = "") -> str:
    """Install `reqs` at once when possible; else one by one, leaving out those PyPI no longer
    serves (removed stub packages and the like) and naming them in the build log."""
    listed = (f"sed -e 's/[[:space:]]#.*//' -e '/^[[:space:]]*#/d' -e '/^[[:space:]]*$/d' "
              f"{reqs}")
    return (f"python -m pip install {options} -r {reqs} || ({listed} | while read -r req; do "
            f"python -m pip install {options} \"$req\" || echo \"SKIPPED requirement: $req\"; "
            "done)")


def _conda_requirements_at(mirror: Path, commit: str, paths: tuple[str, ...]) -> list[str]:
    """The pip requirements of the conda environment file the repository keeps at `commit`."""
    for path in paths:
        text = _show(mirror, commit, path)
        if text is None:
            continue
        try:
            return pip_requirements(text)
        except CondaYamlError as exc:
            raise EnvUnavailable(f"{path} at {commit[:12]}: {exc}") from exc
    raise EnvUnavailable(f"no conda environment file at {', '.join(paths)} in {commit[:12]}")


def _requirements_at(mirror: Path, commit: str, paths: tuple[str, ...]) -> str:
    """The repository's requirements at `commit`, `-r` includes inlined, the project left out."""
    for path in paths:
        text = _show(mirror, commit, path)
        if text is None:
            continue
        base = path.rsplit("/", 1)[0] if "/" in path else ""
        lines: list[str] = []
        for line in text.splitlines():
            stripped = line.strip()
            if stripped.startswith("-r"):
                included = stripped[2:].strip()
                sub = _show(mirror, commit, f"{base}/{included}" if base else included) or ""
                lines.extend(s for s in sub.splitlines() if not s.strip().startswith(_SKIPPED_REQ_PREFIXES))
            elif not stripped.startswith(_SKIPPED_REQ_PREFIXES):
                lines.append(line)
        return "\n".join(lines) + "\n"
    raise EnvUnavailable(f"no requirements file at {', '.join(paths)} in {commit[:12]}")


def _show(mirror: Path, commit: str, path: str) -> str | None:
    proc = git("show", f"{commit}:{path}", git_dir=mirror, check=False)
    return proc.stdout if proc.returncode == 0 else None
