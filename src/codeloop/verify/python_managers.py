"""Where pyenv and poetry keep a project's interpreter, by their conventions, from files only
(neither tool is run: poetry would start the project's interpreter to describe it)."""

from __future__ import annotations

import base64
import hashlib
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

_PYENV_NAME = re.compile(r"^[\w.+-]+$")


@dataclass(frozen=True)
class Found:
    """A directory a manager points at (a virtualenv or an installation) and why."""

    path: Path
    rule: str


def user_text(path: Path) -> str:
    """A small file of the user's (not the repository's), or "" when it cannot be read."""
    try:
        with path.open("rb") as handle:
            return handle.read(65536).decode("utf-8", "replace")
    except OSError:
        return ""


def read_toml(text: str) -> dict[str, object]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return {}


def section(data: Mapping[str, object], *keys: str) -> dict[str, object]:
    for key in keys:
        value = data.get(key)
        data = value if isinstance(value, dict) else {}
    return dict(data)


# --- poetry ---------------------------------------------------------------------------------

def poetry_env_name(name: str, project: Path) -> str:
    """The stem of a project's environment directory in poetry's convention: the name, then
    a hash of the project's real path."""
    clean = re.sub(r'[ $`!*@"\\\r\n\t]', "_", name.lower())[:42]
    where = os.path.normcase(os.path.realpath(project)).encode()
    return f"{clean}-{base64.urlsafe_b64encode(hashlib.sha256(where).digest()).decode()[:8]}"


def poetry_venvs_dir(environ: Mapping[str, str], home: Path) -> Path:
    """poetry's virtualenvs directory: its variable, its config file, else its cache dir."""
    if environ.get("POETRY_VIRTUALENVS_PATH"):
        return Path(environ["POETRY_VIRTUALENVS_PATH"])
    cache = Path(environ.get("POETRY_CACHE_DIR")
                 or Path(environ.get("XDG_CACHE_HOME") or home / ".cache") / "pypoetry")
    config_dir = Path(environ.get("POETRY_CONFIG_DIR")
                      or Path(environ.get("XDG_CONFIG_HOME") or home / ".config") / "pypoetry")
    configured = section(read_toml(user_text(config_dir / "config.toml")), "virtualenvs").get("path")
    if isinstance(configured, str) and configured:
        return Path(configured.replace("{cache-dir}", str(cache))).expanduser()
    return cache / "virtualenvs"


def poetry_env(pyproject: str, has_lock: bool, repo: Path, environ: Mapping[str, str],
               home: Path, notes: list[str]) -> Found | None:
    """The poetry environment of the project at `repo` (its active one, else the newest)."""
    data = read_toml(pyproject)
    poetry = section(data, "tool", "poetry")
    if not poetry and not has_lock:
        return None
    name = poetry.get("name") or section(data, "project").get("name")
    if not isinstance(name, str) or not name:
        notes.append("poetry project without a name in pyproject.toml: its environment cannot be found")
        return None
    where = poetry_venvs_dir(environ, home)
    stem = poetry_env_name(name, repo)
    active = section(read_toml(user_text(where / "envs.toml")), stem).get("minor")
    chosen = where / f"{stem}-py{active}" if isinstance(active, str) else None
    if chosen is None or not (chosen / "pyvenv.cfg").is_file():
        try:
            found = sorted((p for p in where.iterdir() if p.name.startswith(f"{stem}-py")),
                           key=lambda p: p.stat().st_mtime)
        except OSError:
            found = []
        chosen = found[-1] if found else None
    if chosen is None or not (chosen / "pyvenv.cfg").is_file():
        notes.append(f"poetry project, but no environment {stem}-py* in {where}: "
                     "`poetry install` creates it")
        return None
    return Found(chosen, f"poetry's environment for {name}")


# --- pyenv ----------------------------------------------------------------------------------

def pyenv_root(environ: Mapping[str, str], home: Path) -> Path:
    return Path(environ.get("PYENV_ROOT") or home / ".pyenv")


def _version_names(environ: Mapping[str, str], repo_file: str, repo: Path,
                   root: Path) -> tuple[list[str], str]:
    """The version names pyenv would pick in `repo`, and where they came from."""
    if environ.get("PYENV_VERSION"):
        return environ["PYENV_VERSION"].split(":"), "$PYENV_VERSION"
    text, source = repo_file, ".python-version in the repository"
    if not text:
        # pyenv looks in the parent directories too: the user's, not the repository's.
        for parent in repo.parents:
            text, source = user_text(parent / ".python-version"), str(parent / ".python-version")
            if text:
                break
    if not text:
        text, source = user_text(root / "version"), "pyenv's global version"
    names = [line.split("#", 1)[0].strip() for line in text.splitlines()]
    return [n for n in names if n] or ["system"], source


def pyenv_version(root: Path, environ: Mapping[str, str], repo_file: str, repo: Path,
                  notes: list[str]) -> Found | None:
    """The installed pyenv version directory for `repo`; None for "system" or none installed.

    `repo_file` is the repository's `.python-version` (read safely by the caller): its names
    only choose among the user's installed versions.
    """
    names, source = _version_names(environ, repo_file, repo, root)
    for name in names:
        if name == "system":
            return None  # pyenv hands over to the next python3 on PATH: the system's
        if not _PYENV_NAME.match(name) or name in (".", ".."):
            notes.append(f"pyenv version {name!r} ({source}) is not a version name")
            continue
        path = root / "versions" / name
        if path.is_dir():
            return Found(path, f"pyenv version {name} ({source})")
        notes.append(f"pyenv version {name} ({source}) is not installed in {root}")
    return None
