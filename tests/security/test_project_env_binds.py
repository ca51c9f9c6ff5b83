"""The project's Python environment may make the sandbox show host directories (read-only):
a repository must not be able to steer that anywhere else, nor get anything of its own run
on the host. pyvenv.cfg, `.python-version`, a `.venv` link and the project's config are the
repository's text; only Python installations outside it, and the user's own environments,
are ever shown."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from codeloop.config import Settings
from codeloop.sandbox.base import Limits
from codeloop.sandbox.probe import Capabilities
from codeloop.session.setup import open_workspace_and_sandbox, project_python
from codeloop.verify.python_env import find_python
from codeloop.verify.settings import VerifySettings
from tests.security.conftest import tree_digest
from tests.verify.pyenv_fakes import env, find, make_installation, make_venv, world_fixture  # noqa: F401

pytestmark = pytest.mark.security


def test_a_venv_in_the_repository_that_is_a_link_is_not_followed(world: dict[str, Path]) -> None:
    outside = make_venv(world["tmp"] / "elsewhere", world["base"] / "bin")
    (world["repo"] / ".venv").symlink_to(outside)
    found = find(world)
    assert found.is_system and outside not in found.binds
    assert any(".venv in the repository goes through a link" in n for n in found.notes)


@pytest.mark.parametrize("home", ["inside", "root", "not-python", "data-dir"])
def test_a_pyvenv_cfg_cannot_make_the_sandbox_show_other_host_directories(
        world: dict[str, Path], home: str) -> None:
    # pyvenv.cfg in the repository is the repository's text: its `home` must lead to a Python
    # installation outside the repository, never to /, plain files or codeloop's own data.
    extra: dict[str, str] = {}
    if home == "inside":
        target = make_installation(world["repo"] / "py") / "bin"
    elif home == "root":
        target = Path("/bin")  # resolves into the system view: shown already, nothing bound
    elif home == "not-python":
        (world["tmp"] / "secrets").mkdir()
        (world["tmp"] / "secrets" / "python3").write_text("#!/bin/sh\n")
        (world["tmp"] / "secrets" / "python3").chmod(0o755)
        target = world["tmp"] / "secrets"
    else:
        target = make_installation(world["tmp"] / "opt") / "bin"
        extra["CODELOOP_DATA_DIR"] = str(world["tmp"] / "opt" / "data")
    make_venv(world["repo"] / ".venv", target)
    found = find(world, **extra)
    shown = [Path(os.path.realpath(b)) for b in found.binds]
    assert shown == [], shown
    expected = {"inside": "inside the repository", "root": None,
                "not-python": "not a Python installation", "data-dir": "holds codeloop's own files"}[home]
    assert expected is None or any(expected in n for n in found.notes), found.notes
    assert not world["marker"].exists()


def test_the_home_directory_as_a_prefix_is_never_bound(world: dict[str, Path]) -> None:
    # A Python built with --prefix=$HOME is a real installation; binding it would show all of $HOME.
    make_installation(world["home"], version="3.12")
    make_venv(world["repo"] / ".venv", world["home"] / "bin", version="3.12.0")
    found = find(world)
    assert found.base is not None and found.binds == ()
    assert any("would show your home directory" in n for n in found.notes)


@pytest.mark.parametrize("version", ["../../..", "../../../etc", "/etc", "3.11.9/../../.."])
def test_a_python_version_file_cannot_name_a_path(world: dict[str, Path], version: str) -> None:
    (world["repo"] / ".python-version").write_text(version + "\n")
    found = find(world, PYENV_ROOT=str(world["home"] / ".pyenv"))
    assert found.binds == () and found.is_system, found


@pytest.mark.parametrize("configured", ["{tmp}/secrets/id_rsa", "{tmp}/secrets", "/etc/passwd"])
def test_a_configured_interpreter_that_is_no_interpreter_shows_nothing(world: dict[str, Path],
                                                                       configured: str) -> None:
    # `verify.python` may come from the repository's own (untrusted) config file.
    (world["tmp"] / "secrets").mkdir()
    (world["tmp"] / "secrets" / "id_rsa").write_text("KEY\n")
    found = find(world, VerifySettings(python=configured.format(tmp=world["tmp"])))
    assert found.binds == (), found


def test_the_sandbox_sees_the_environment_read_only_and_nothing_beside_it(
        tmp_path: Path, caps: Capabilities) -> None:
    # The repository's .venv is real; its python is run only inside the sandbox. Its base
    # interpreter is bound; the secrets beside that, the user's repository and $HOME are not.
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "mod.py").write_text("X = 1\n")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(repo / ".venv")], check=True)
    before = tree_digest(repo)
    python = find_python(repo, None, {"HOME": str(tmp_path / "home"), "PATH": ""})
    assert python.in_repo and python.base is not None
    workspace, sandbox = open_workspace_and_sandbox(repo, tmp_path / "state", Settings(), python=python)
    base = python.base.prefix
    out = sandbox.run(
        f"python3 -c 'print(1 + 1)'; touch {base}/planted && echo WROTE-BASE;"
        f" echo pwned > {repo}/.venv/pyvenv.cfg; echo pwned > {repo}/mod.py;"
        f" ls -A {base.parent}; ls -A {tmp_path}; ls -A /root 2>&1 | head -3; echo HOME=$HOME",
        workspace.path, limits=Limits(timeout_s=60)).output
    assert "2\n" in out and "WROTE-BASE" not in out, out
    assert not (base / "planted").exists()
    assert tree_digest(repo) == before  # writes through the repository's path reach the workspace only
    assert workspace.read("mod.py") == b"pwned\n"
    listed = [line for line in out.splitlines() if line and "/" not in line and "=" not in line]
    siblings = {p.name for p in base.parent.iterdir()} - {base.name}
    assert not siblings & set(listed), out
    assert "HOME=/tmp" in out


def test_nothing_from_the_repository_runs_on_the_host_to_choose_the_interpreter(
        world: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    # Its .venv's python, pytest and bandit write a marker when run; neither detection, the
    # access check nor the session's sandbox set-up may run them on the host.
    make_venv(world["repo"] / ".venv", world["base"] / "bin", marker=world["marker"])
    (world["repo"] / ".python-version").write_text("3.11.9\n")
    (world["repo"] / "poetry.lock").write_text("")
    monkeypatch.setenv("HOME", str(world["home"]))
    python = project_python(world["repo"], Settings())
    assert python is not None and python.in_repo
    open_workspace_and_sandbox(world["repo"], world["tmp"] / "state", Settings(sandbox=False), python=python)
    assert not world["marker"].exists()
