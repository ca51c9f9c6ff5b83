"""Finding a local interpreter for the Python version a task's environment asks for.

Nothing is downloaded: an interpreter is taken from PATH (`python3.X`), from pyenv's
versions directory when one exists, or Debian's `pypy3` for its language version.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Interpreter:
    path: Path
    version: str  # "3.9"
    implementation: str  # "cpython" | "pypy"


def _probe(path: Path) -> Interpreter | None:
    try:
        proc = subprocess.run(
            [str(path), "-c",
             "import sys, platform; print('%d.%d' % sys.version_info[:2], "
             "platform.python_implementation().lower())"],
            capture_output=True, text=True, timeout=30, check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0 or not proc.stdout.strip():
        return None
    version, impl = proc.stdout.split()
    return Interpreter(path=path, version=version, implementation=impl)


def _candidates(version: str) -> list[Path]:
    found: list[Path] = []
    on_path = shutil.which(f"python{version}")
    if on_path:
        found.append(Path(on_path))
    pyenv_root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    versions = pyenv_root / "versions"
    if versions.is_dir():
        for entry in sorted(versions.iterdir(), reverse=True):
            if entry.name.startswith(f"{version}."):
                found.append(entry / "bin" / "python")
    return found


def find_interpreter(version: str, *, allow_pypy: bool = True) -> Interpreter | None:
    """A CPython of exactly `version` if one is installed, else a pypy3 of that version."""
    for path in _candidates(version):
        probed = _probe(path)
        # pyenv's shims answer for versions that are not selected; the probe weeds them out.
        if probed and probed.version == version and probed.implementation == "cpython":
            return probed
    if allow_pypy:
        pypy = shutil.which("pypy3")
        if pypy:
            probed = _probe(Path(pypy))
            if probed and probed.version == version:
                return probed
    return None
