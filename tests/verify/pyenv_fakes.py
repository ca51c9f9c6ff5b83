"""Fake Python installations and virtualenvs on disk, for the interpreter-finding tests: each
interpreter or script is a shell script that writes a marker file if anything runs it."""

from __future__ import annotations

from pathlib import Path

import pytest

from codeloop.verify.python_env import ProjectPython, find_python
from codeloop.verify.settings import VerifySettings


def make_installation(prefix: Path, version: str = "3.11", marker: Path | None = None) -> Path:
    """A fake Python installation: bin/pythonX.Y (a script) and lib/pythonX.Y/os.py."""
    (prefix / "bin").mkdir(parents=True)
    exe = prefix / "bin" / f"python{version}"
    exe.write_text(f"#!/bin/sh\ntouch {marker}\n" if marker else "#!/bin/sh\nexit 0\n")
    exe.chmod(0o755)
    (prefix / "bin" / "python3").symlink_to(exe.name)
    (prefix / "lib" / f"python{version}").mkdir(parents=True)
    (prefix / "lib" / f"python{version}" / "os.py").write_text("")
    return prefix


def make_venv(path: Path, home: Path, marker: Path | None = None, version: str = "3.11.4") -> Path:
    """A fake virtualenv whose python (and a console script) would write `marker` if run."""
    (path / "bin").mkdir(parents=True)
    (path / "pyvenv.cfg").write_text(f"home = {home}\ninclude-system-site-packages = false\n"
                                     f"version = {version}\n")
    for name in ("python", "python3", "pytest", "bandit"):
        script = path / "bin" / name
        script.write_text(f"#!/bin/sh\ntouch {marker or '/dev/null'}\n")
        script.chmod(0o755)
    (path / "lib" / "python3.11" / "site-packages").mkdir(parents=True)
    return path


@pytest.fixture(name="world")
def world_fixture(tmp_path: Path) -> dict[str, Path]:
    """A home, an interpreter installed in it, a repository and a marker any run would write."""
    home = tmp_path / "home"
    home.mkdir()
    marker = tmp_path / "EXECUTED"
    base = make_installation(home / ".pyenv" / "versions" / "3.11.9", marker=marker)
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "pyproject.toml").write_text("[tool.pytest.ini_options]\n")
    return {"home": home, "base": base, "repo": repo, "marker": marker, "tmp": tmp_path}


def env(world: dict[str, Path], **extra: str) -> dict[str, str]:
    return {"HOME": str(world["home"]), "PATH": "", **extra}


def find(world: dict[str, Path], settings: VerifySettings | None = None, **extra: str) -> ProjectPython:
    return find_python(world["repo"], settings, env(world, **extra))
