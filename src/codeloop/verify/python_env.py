"""Which Python the project's tests run with: the interpreter its user would use, found on the
host by reading files (never by running anything from the repository), in a fixed order.

1. `verify.python` when the config sets it;
2. the repository's own virtualenv, `.venv` then `venv` (uv's project environment too, or
   `$UV_PROJECT_ENVIRONMENT` for a uv project);
3. a poetry project's environment in poetry's virtualenvs directory (by poetry's naming
   convention: poetry itself is not run, it would start the project's interpreter);
4. the activated virtualenv (`$VIRTUAL_ENV`): after the project's own, since codeloop itself
   may be installed in, and started from, a virtualenv that is not the project's;
5. pyenv's version for the repository (`$PYENV_VERSION`, `.python-version`, pyenv's global
   version) when the repository names one;
6. the first `python3` on `$PATH` (a pyenv shim resolved as in 5);
7. the system's `python3`, which the sandbox always has.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath

from codeloop.config import data_dir, user_config_dir
from codeloop.sandbox.environment import Toolchain
from codeloop.verify.python_managers import poetry_env, pyenv_root, pyenv_version, user_text
from codeloop.verify.pyvenv import Installation, VenvConfig, installation, parse_pyvenv, under_any
from codeloop.verify.settings import VerifySettings
from codeloop.workspace.errors import UnsafePath
from codeloop.workspace.hostfs import SafeRoot

_REPO_VENVS = (".venv", "venv")
# The session's `ProjectPython` in a tool context's services.
PROJECT_PYTHON = "project_python"


@dataclass(frozen=True)
class ProjectPython:
    """The chosen interpreter and what of the host the sandbox must show (read-only) for it.

    `venv` and `bin_dir` are paths as commands see them: a virtualenv inside the repository
    is reached through the repository's path, which in the sandbox leads to the workspace.
    """

    rule: str
    interpreter: str = "python3"
    venv: Path | None = None
    base: Installation | None = None
    bin_dir: Path | None = None
    in_repo: bool = False
    binds: tuple[Path, ...] = ()
    # What the sandbox's uid must be able to read for the interpreter to start.
    needs: tuple[Path, ...] = ()
    notes: tuple[str, ...] = ()
    # Why commands cannot start it in the sandbox (e.g. its files are unreadable there).
    problem: str | None = None

    @property
    def is_system(self) -> bool:
        return self.bin_dir is None


SYSTEM = ProjectPython("the system's python3 (no project environment was found)")


def describe_python(python: ProjectPython) -> list[str]:
    """The interpreter, why it was chosen, and what a person should know about it."""
    lines = [f"python: {python.interpreter} ({python.rule})"]
    if python.problem:
        lines.append(f"python: {python.problem}")
    return lines + list(python.notes)


@dataclass
class _Finder:
    repo: Path
    settings: VerifySettings
    environ: Mapping[str, str]
    notes: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.repo = Path(os.path.realpath(self.repo))
        self.tree = SafeRoot(self.repo)
        self.home = Path(self.environ.get("HOME") or str(Path.home()))

    # --- the rules, in order ---------------------------------------------------------------

    def find(self) -> ProjectPython:
        for rule in (self._configured, self._repo_venv, self._poetry, self._activated,
                     self._pyenv_for_repo, self._on_path):
            found = rule()
            if found is not None:
                return replace(found, notes=(*found.notes, *self.notes))
        return replace(SYSTEM, notes=tuple(self.notes))

    def _configured(self) -> ProjectPython | None:
        if "python" not in self.settings.model_fields_set:
            return None
        value = self.settings.python
        rule = f"verify.python = {value} in the config"
        if "/" not in value:
            return ProjectPython(f"{rule} (found on the sandbox's PATH)", interpreter=value)
        path = Path(value) if value.startswith("/") else self.repo / value
        parent = path.parent.parent
        if self._inside_repo(path):
            rel = PurePosixPath(os.path.relpath(parent, self.repo)).as_posix()
            found = self._repo_venv_at(rel, rule)
            return replace(found, interpreter=value) if found else ProjectPython(rule, interpreter=value)
        if (parent / "pyvenv.cfg").is_file():
            return self._venv(parent, rule, interpreter=value)
        return self._installation(installation(path.parent, names=[path.name]), rule)

    def _repo_venv(self) -> ProjectPython | None:
        uv = self.tree.exists("uv.lock")
        custom = self.environ.get("UV_PROJECT_ENVIRONMENT") if uv else None
        if custom:
            path = Path(custom) if custom.startswith("/") else self.repo / custom
            rule = "uv's project environment ($UV_PROJECT_ENVIRONMENT)"
            if self._inside_repo(path):
                found = self._repo_venv_at(os.path.relpath(path, self.repo), rule)
            else:
                found = self._venv(path, rule) if (path / "pyvenv.cfg").is_file() else None
            if found:
                return found
        for rel in _REPO_VENVS:
            kind = " (a uv project: uv.lock)" if uv else ""
            found = self._repo_venv_at(rel, f"the repository's {rel}{kind}")
            if found:
                return found
        if uv:
            self.notes.append("uv.lock but no .venv in the repository: `uv sync` creates it")
        return None

    def _poetry(self) -> ProjectPython | None:
        found = poetry_env(self._repo_text("pyproject.toml"), self.tree.exists("poetry.lock"),
                           self.repo, self.environ, self.home, self.notes)
        return self._venv(found.path, found.rule) if found else None

    def _activated(self) -> ProjectPython | None:
        value = self.environ.get("VIRTUAL_ENV", "")
        if not value.startswith("/"):
            return None
        path = Path(value)
        rule = "the activated virtualenv ($VIRTUAL_ENV)"
        if os.path.realpath(path) == os.path.realpath(sys.prefix):
            rule += ", the one codeloop runs from"
        if self._inside_repo(path):
            return self._repo_venv_at(os.path.relpath(path, self.repo), rule)
        if not (path / "pyvenv.cfg").is_file():
            self.notes.append(f"$VIRTUAL_ENV {path} is not a virtualenv (no pyvenv.cfg)")
            return None
        return self._venv(path, rule)

    def _pyenv_for_repo(self) -> ProjectPython | None:
        if "PYENV_VERSION" not in self.environ and not self.tree.is_file(".python-version"):
            return None
        root = pyenv_root(self.environ, self.home)
        # uv and asdf read `.python-version` too: without pyenv it is not pyenv's to resolve.
        return self._pyenv(root) if (root / "versions").is_dir() else None

    def _on_path(self) -> ProjectPython | None:
        for entry in self.environ.get("PATH", "").split(os.pathsep):
            if not entry.startswith("/"):
                continue  # relative to wherever codeloop was started: not the project's
            candidate = Path(entry) / "python3"
            if self._inside_repo(candidate):
                rel = os.path.relpath(candidate.parent.parent, self.repo)
                found = self._repo_venv_at(rel, f"{candidate}, the first python3 on $PATH")
                if found:
                    return found
                continue
            if not os.access(candidate, os.X_OK) or candidate.is_dir():
                continue
            if candidate.parent.name == "shims" and (candidate.parent.parent / "versions").is_dir():
                return self._pyenv(candidate.parent.parent)
            rule = f"{candidate}, the first python3 on $PATH"
            if (candidate.parent.parent / "pyvenv.cfg").is_file():
                return self._venv(candidate.parent.parent, rule)
            found_inst = installation(candidate.parent)
            if isinstance(found_inst, Installation) and found_inst.in_system_dirs:
                return replace(SYSTEM, rule=f"{rule}: the system's")
            return self._installation(found_inst, rule)
        return None

    def _pyenv(self, root: Path) -> ProjectPython | None:
        found = pyenv_version(root, self.environ, self._repo_text(".python-version"), self.repo, self.notes)
        if found is None:
            return None
        if (found.path / "pyvenv.cfg").is_file():
            return self._venv(found.path, found.rule)  # a pyenv-virtualenv environment
        return self._installation(installation(found.path / "bin"), found.rule)

    # --- environments ------------------------------------------------------------------------

    def _repo_venv_at(self, rel: str, rule: str) -> ProjectPython | None:
        """A virtualenv inside the repository, read through `SafeRoot` (a link is not followed)."""
        rel = PurePosixPath(rel).as_posix()
        if rel.startswith("..") or rel == ".":
            return None
        try:
            data = self.tree.read_bytes(f"{rel}/pyvenv.cfg", 65536)
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return None
        except (OSError, UnsafePath):
            self.notes.append(f"{rel} in the repository goes through a link or is not a file: not used")
            return None
        venv = self.repo / rel
        base = self._base(parse_pyvenv(data.decode("utf-8", "replace")), rel)
        return ProjectPython(rule, interpreter=str(venv / "bin" / "python"), venv=venv, base=base,
                             bin_dir=venv / "bin", in_repo=True, binds=self._bindable(base),
                             needs=(*_venv_needs(venv, base), *self._base_needs(base)))

    def _venv(self, path: Path, rule: str, interpreter: str | None = None) -> ProjectPython:
        """A virtualenv outside the repository: the user's own files, links followed."""
        refused = self._refuse(path)
        if refused:
            self.notes.append(f"{path} is not shown to the sandbox: {refused}")
        base = self._base(parse_pyvenv(user_text(path / "pyvenv.cfg")), str(path))
        binds = () if refused else tuple(dict.fromkeys([path, Path(os.path.realpath(path))]))
        return ProjectPython(rule, interpreter=interpreter or str(path / "bin" / "python"), venv=path,
                             base=base, bin_dir=path / "bin", binds=(*binds, *self._bindable(base)),
                             needs=(*_venv_needs(path, base), *self._base_needs(base)))

    def _installation(self, found: Installation | str, rule: str) -> ProjectPython | None:
        if isinstance(found, str):
            self.notes.append(f"{rule}: {found}")
            return None
        return ProjectPython(rule, interpreter=str(found.interpreter), base=found,
                             bin_dir=found.interpreter.parent, binds=self._bindable(found),
                             needs=self._base_needs(found))

    def _base(self, config: VenvConfig, where: str) -> Installation | None:
        if config.home is None:
            self.notes.append(f"{where}/pyvenv.cfg names no base interpreter (home)")
            return None
        if self._inside_repo(config.home):
            self.notes.append(f"the base interpreter of {where} is inside the repository: not used")
            return None
        found = installation(config.home, config.version)
        if isinstance(found, str):
            self.notes.append(f"the base interpreter of {where}: {found}")
            return None
        return found

    def _bindable(self, base: Installation | None) -> tuple[Path, ...]:
        if base is None or base.in_system_dirs:
            return ()
        refused = self._refuse(base.prefix)
        if refused:
            self.notes.append(f"{base.prefix} is not shown to the sandbox: {refused}")
            return ()
        return (base.prefix,)

    @staticmethod
    def _base_needs(base: Installation | None) -> tuple[Path, ...]:
        return () if base is None else (base.interpreter, base.stdlib / "os.py")

    # --- checks -------------------------------------------------------------------------------

    def _inside_repo(self, path: Path) -> bool:
        """`path` as written, and resolved, against the repository (a link could lead in)."""
        return under_any(Path(os.path.abspath(path)), [self.repo]) or \
            under_any(Path(os.path.realpath(path)), [self.repo])

    def _refuse(self, path: Path) -> str | None:
        """Why the sandbox must not see `path`, or None: never the whole home directory, the
        root, codeloop's own data and config, or the repository."""
        real = Path(os.path.realpath(path))
        if real == Path("/"):
            return "it is the root directory"
        if under_any(self.home, [real]):
            return "it would show your home directory"
        for own in (data_dir(dict(self.environ)), user_config_dir()):
            if under_any(Path(os.path.realpath(own)), [real]):
                return f"it holds codeloop's own files ({own})"
        if under_any(self.repo, [real]) or self._inside_repo(real):
            return "it holds the repository"
        return None

    def _repo_text(self, rel: str) -> str:
        try:
            data = self.tree.read_if_file(rel)
        except (OSError, UnsafePath):
            return ""
        return "" if data is None else data.decode("utf-8", "replace")


def _venv_needs(venv: Path, base: Installation | None) -> tuple[Path, ...]:
    """What of a virtualenv its interpreter reads to start: its config, scripts, packages."""
    site = (venv / "lib" / f"python{base.version[0]}.{base.version[1]}" / "site-packages",) if base else ()
    return (venv / "pyvenv.cfg", venv / "bin", *site)


def find_python(repo: Path, settings: VerifySettings | None = None,
                environ: Mapping[str, str] | None = None) -> ProjectPython:
    """The interpreter verification uses for `repo`, by the rules in this module's docstring."""
    return _Finder(repo, settings or VerifySettings(), os.environ if environ is None else environ).find()


def project_toolchain(python: ProjectPython, repo: Path, workspace: Path | None) -> Toolchain | None:
    """What the sandbox needs for `python`: its directories read-only, its bin first on PATH,
    and (with a `workspace`) the repository's path leading to the workspace, so the absolute
    paths a virtualenv holds (script shebangs, editable installs) reach the edited files."""
    if python.bin_dir is None:
        return None
    links = {Path(os.path.realpath(repo)): Path(os.path.realpath(workspace))} if workspace else {}
    return Toolchain(ro_binds=list(python.binds), bin_dirs=[python.bin_dir],
                     env={"VIRTUAL_ENV": str(python.venv)} if python.venv else {}, links=links)
