"""Finding the project's Python on the host from files only: each rule, its order, and that
nothing from the repository is ever run, nor any host directory shown that is not an
interpreter's."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from tests.verify.pyenv_fakes import env, find, make_installation, make_venv, world_fixture  # noqa: F401

from codeloop.cli.doctor_project import env_which, project_report
from codeloop.verify.env_access import unreadable
from codeloop.verify.python_env import find_python, project_toolchain
from codeloop.verify.python_managers import poetry_env_name
from codeloop.verify.pyvenv import parse_pyvenv
from codeloop.verify.settings import VerifySettings


def test_pyvenv_cfg_is_read_as_text() -> None:
    cfg = parse_pyvenv("home = /opt/py/bin\nversion_info = 3.12.1.final.0\nuv = 0.4\n")
    assert cfg.home == Path("/opt/py/bin") and cfg.version == (3, 12)
    assert parse_pyvenv("home = relative/bin\n").home is None


def test_the_repositorys_venv_is_found_and_never_run_on_the_host(world: dict[str, Path]) -> None:
    venv = make_venv(world["repo"] / ".venv", world["base"] / "bin", marker=world["marker"])
    found = find(world)
    assert found.rule == "the repository's .venv" and found.in_repo
    assert found.venv == venv and found.bin_dir == venv / "bin"
    assert found.base is not None and found.base.prefix == world["base"]
    # The venv is reached through the workspace; only its base installation is bound.
    assert found.binds == (world["base"],)
    toolchain = project_toolchain(found, world["repo"], world["tmp"] / "workspace")
    assert toolchain is not None and toolchain.bin_dirs == [venv / "bin"]
    assert toolchain.env == {"VIRTUAL_ENV": str(venv)}
    assert toolchain.links == {world["repo"]: world["tmp"] / "workspace"}
    # Nor does the doctor's report run anything to tell the interpreter or the tools.
    report = project_report(world["repo"])
    assert report["python"] == str(venv / "bin" / "python") and "pytest" in (report["test"] or "")
    assert env_which(found, world["repo"])("bandit") == str(venv / "bin" / "bandit")
    assert not world["marker"].exists()


def test_venv_is_the_second_name_and_uv_is_said(world: dict[str, Path]) -> None:
    make_venv(world["repo"] / "venv", world["base"] / "bin")
    assert find(world).rule == "the repository's venv"
    (world["repo"] / "uv.lock").write_text("")
    make_venv(world["repo"] / ".venv", world["base"] / "bin")
    assert find(world).rule == "the repository's .venv (a uv project: uv.lock)"


def test_a_uv_project_without_its_venv_says_how_to_make_it(world: dict[str, Path]) -> None:
    (world["repo"] / "uv.lock").write_text("")
    found = find(world)
    assert found.is_system and any("uv sync" in n for n in found.notes)


def test_uv_project_environment_elsewhere(world: dict[str, Path]) -> None:
    (world["repo"] / "uv.lock").write_text("")
    venv = make_venv(world["tmp"] / "uvenv", world["base"] / "bin")
    found = find(world, UV_PROJECT_ENVIRONMENT=str(venv))
    assert found.venv == venv and venv in found.binds and not found.in_repo


def test_the_projects_own_venv_wins_over_the_activated_one(world: dict[str, Path]) -> None:
    other = make_venv(world["tmp"] / "codeloop-venv", world["base"] / "bin")
    assert find(world, VIRTUAL_ENV=str(other)).venv == other
    make_venv(world["repo"] / ".venv", world["base"] / "bin")
    assert find(world, VIRTUAL_ENV=str(other)).venv == world["repo"] / ".venv"


def test_an_activated_external_venv_is_bound_read_only_with_its_base(world: dict[str, Path]) -> None:
    venv = make_venv(world["tmp"] / "envs" / "proj", world["base"] / "bin")
    found = find(world, VIRTUAL_ENV=str(venv), PATH=f"{venv}/bin:/usr/bin")
    assert found.rule == "the activated virtualenv ($VIRTUAL_ENV)"
    assert found.binds == (venv, world["base"]) and found.bin_dir == venv / "bin"
    if os.path.realpath(sys.prefix) != str(venv):
        assert "codeloop runs from" not in found.rule
    own = find_python(world["repo"], None, env(world, VIRTUAL_ENV=sys.prefix))
    assert own.rule.endswith("the one codeloop runs from") or not (Path(sys.prefix) / "pyvenv.cfg").is_file()


def test_pyenv_version_from_the_repository(world: dict[str, Path]) -> None:
    (world["repo"] / ".python-version").write_text("3.11.9\n")
    found = find(world, PYENV_ROOT=str(world["home"] / ".pyenv"))
    assert found.rule == "pyenv version 3.11.9 (.python-version in the repository)"
    assert found.bin_dir == world["base"] / "bin" and found.binds == (world["base"],)


def test_pyenv_version_that_is_not_installed_or_not_a_name(world: dict[str, Path]) -> None:
    (world["repo"] / ".python-version").write_text("../../etc\n3.9.1\n")
    found = find(world, PYENV_ROOT=str(world["home"] / ".pyenv"))
    assert found.is_system
    assert any("is not a version name" in n for n in found.notes)
    assert any("3.9.1" in n and "not installed" in n for n in found.notes)


def test_a_pyenv_shim_on_path_resolves_to_the_real_interpreter(world: dict[str, Path]) -> None:
    root = world["home"] / ".pyenv"
    (root / "shims").mkdir()
    (root / "shims" / "python3").write_text("#!/bin/sh\nexec pyenv exec python3\n")
    (root / "shims" / "python3").chmod(0o755)
    (root / "version").write_text("3.11.9\n")
    found = find(world, PATH=f"{root / 'shims'}:/usr/bin")
    assert found.rule == "pyenv version 3.11.9 (pyenv's global version)"
    assert found.bin_dir == world["base"] / "bin"


def test_pyenv_virtualenv_by_name(world: dict[str, Path]) -> None:
    venv = make_venv(world["home"] / ".pyenv" / "versions" / "proj-env", world["base"] / "bin")
    found = find(world, PYENV_VERSION="proj-env", PYENV_ROOT=str(world["home"] / ".pyenv"))
    assert found.venv == venv and found.rule == "pyenv version proj-env ($PYENV_VERSION)"


def test_poetry_environment_by_its_naming_convention(world: dict[str, Path]) -> None:
    (world["repo"] / "pyproject.toml").write_text('[tool.poetry]\nname = "My App"\n')
    stem = poetry_env_name("My App", world["repo"])
    assert stem.startswith("my_app-") and len(stem) == len("my_app-") + 8
    assert poetry_env_name("My App", world["tmp"]) != stem  # the hash is of the project's path
    venvs = world["home"] / ".cache" / "pypoetry" / "virtualenvs"
    older = make_venv(venvs / f"{stem}-py3.10", world["base"] / "bin")
    chosen = make_venv(venvs / f"{stem}-py3.11", world["base"] / "bin")
    os.utime(older, (1, 1))
    found = find(world)
    assert found.venv == chosen and found.rule == "poetry's environment for My App"
    (venvs / "envs.toml").write_text(f'[{stem}]\nminor = "3.10"\npatch = "3.10.4"\n')
    assert find(world).venv == older


def test_poetry_without_an_environment_says_so(world: dict[str, Path]) -> None:
    (world["repo"] / "poetry.lock").write_text("")
    (world["repo"] / "pyproject.toml").write_text('[project]\nname = "x"\n')
    found = find(world)
    assert found.is_system and any("poetry install" in n for n in found.notes)


def test_verify_python_wins_and_is_explained(world: dict[str, Path]) -> None:
    external = make_venv(world["tmp"] / "chosen", world["base"] / "bin")
    make_venv(world["repo"] / ".venv", world["base"] / "bin")
    found = find(world, VerifySettings(python=str(external / "bin" / "python")))
    assert found.venv == external and found.rule.startswith("verify.python = ")
    relative = find(world, VerifySettings(python=".venv/bin/python"))
    assert relative.in_repo and relative.venv == world["repo"] / ".venv"
    bare = find(world, VerifySettings(python="python3.12"))
    assert bare.is_system and bare.interpreter == "python3.12"


def test_the_first_python3_on_path(world: dict[str, Path]) -> None:
    venv = make_venv(world["tmp"] / "onpath", world["base"] / "bin")
    assert find(world, PATH=f"relative/bin:{venv}/bin:/usr/bin").venv == venv
    system = find(world, PATH="/usr/bin:/bin")
    assert system.is_system and "the system's" in system.rule
    assert find(world).is_system  # nothing found at all: the system's python3


def test_nothing_is_bound_for_the_system_python(world: dict[str, Path]) -> None:
    found = find(world, PATH="/usr/bin")
    assert project_toolchain(found, world["repo"], world["tmp"]) is None


def test_what_the_sandbox_uid_cannot_read_is_said(world: dict[str, Path]) -> None:
    venv = make_venv(world["tmp"] / "private", world["base"] / "bin")
    found = find(world, VIRTUAL_ENV=str(venv))
    # As the uid commands run as when codeloop drops from root (not the files' owner).
    assert unreadable(found, world["repo"], sandbox_uid=61_000) is None
    (venv / "bin").chmod(0o700)
    try:
        problem = unreadable(found, world["repo"], sandbox_uid=61_000)
    finally:
        (venv / "bin").chmod(0o755)
    assert problem is not None and "uid 61000" in problem and str(venv / "bin") in problem
    assert f"chmod -R o+rX {venv}" in problem


def test_a_python_version_file_without_pyenv_is_left_to_the_next_rule(world: dict[str, Path]) -> None:
    # uv and asdf read .python-version too: with no pyenv root there is nothing to resolve.
    (world["repo"] / ".python-version").write_text("3.12\n")
    found = find(world, PYENV_ROOT=str(world["tmp"] / "no-pyenv"))
    assert found.is_system and not any("pyenv" in n for n in found.notes)
