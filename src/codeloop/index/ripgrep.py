"""Where the ripgrep binary is: the one codeloop's own environment installed, else PATH.

codeloop depends on the `ripgrep` package, which puts `rg` into its environment's scripts
directory. That directory is on PATH only while the environment is activated, so a user
running `.venv/bin/codeloop` (or a pipx install) would otherwise get the slow Python scan.
"""

from __future__ import annotations

import functools
import importlib.metadata
import os
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

_NAMES = ("rg", "rg.exe")


@dataclass(frozen=True)
class Ripgrep:
    """A ripgrep binary that answered `--version`."""

    path: str
    version: str


def _from_package() -> Iterator[Path]:
    """The `rg` the `ripgrep` package installed, wherever its environment put it."""
    try:
        files = importlib.metadata.distribution("ripgrep").files or []
    except importlib.metadata.PackageNotFoundError:
        return
    for file in files:
        if file.name in _NAMES:
            yield Path(file.locate()).resolve()


def _beside_interpreter() -> Iterator[Path]:
    """`rg` in this environment's scripts directories and beside the interpreter."""
    scripts = [sysconfig.get_path("scripts"), sysconfig.get_path("scripts", f"{os.name}_user"),
               os.path.dirname(sys.executable)]
    for directory in scripts:
        for name in _NAMES:
            yield Path(directory) / name


def _on_path() -> Iterator[Path]:
    found = shutil.which("rg")
    if found:
        yield Path(found)


def _version(candidate: Path) -> str | None:
    """The version a candidate reports; None when it is not a working ripgrep (e.g. a
    pyenv shim that cannot find `rg` in the selected Python)."""
    if not (candidate.is_file() and os.access(candidate, os.X_OK)):
        return None
    try:
        proc = subprocess.run([str(candidate), "--version"], capture_output=True, timeout=10,
                              check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    first = proc.stdout.decode("utf-8", "replace").partition("\n")[0].split()
    if proc.returncode != 0 or len(first) < 2 or first[0] != "ripgrep":
        return None
    return first[1]


@functools.cache
def find_ripgrep() -> Ripgrep | None:
    """The ripgrep to run (checked once per process), or None: use the Python scan."""
    seen: set[Path] = set()
    for candidate in (*_from_package(), *_beside_interpreter(), *_on_path()):
        if candidate in seen:
            continue
        seen.add(candidate)
        version = _version(candidate)
        if version is not None:
            return Ripgrep(str(candidate), version)
    return None


def grep_engine() -> str:
    """One line for people: which grep codeloop uses."""
    rg = find_ripgrep()
    return f"ripgrep {rg.version} at {rg.path}" if rg else "Python fallback (ripgrep not found)"
