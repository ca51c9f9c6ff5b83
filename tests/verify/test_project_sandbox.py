"""The project's own virtualenv in the real sandbox: found first, its scripts and editable
installs working, everything of the host it needs read-only, nothing else shown."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from codeloop.cli.doctor_project import print_project, project_report
from codeloop.config import Settings
from codeloop.sandbox.base import Limits, Sandbox
from codeloop.sandbox.probe import probe
from codeloop.session.setup import open_workspace_and_sandbox
from codeloop.verify.detect import detect, sandbox_which
from codeloop.verify.env_access import with_access_check
from codeloop.verify.python_env import ProjectPython, describe_python, find_python
from codeloop.workspace.base import LayeredWorkspace


@pytest.fixture(scope="module", autouse=True)
def isolation() -> None:
    caps = probe()
    if not caps.isolation_available or not caps.overlay.ok:
        pytest.skip(f"CANNOT EXERCISE: bwrap overlay unavailable ({caps.overlay.detail})")


def make_venv(path: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    return path


def site_packages(venv: Path) -> Path:
    return next((venv / "lib").glob("python3*/site-packages"))


def sandbox_for(repo: Path, state: Path, environ: dict[str, str]) -> tuple[ProjectPython, LayeredWorkspace, Sandbox]:
    python = with_access_check(find_python(repo, None, environ), repo, sandboxed=True)
    workspace, sandbox = open_workspace_and_sandbox(repo, state, Settings(), python=python)
    return python, workspace, sandbox


def run(sandbox: Sandbox, workspace: LayeredWorkspace, command: str) -> str:
    result = sandbox.run(command, workspace.path, limits=Limits(timeout_s=60))
    return result.output


def test_the_repositorys_venv_its_scripts_and_editable_installs(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "mod.py").write_text("X = 1\n")
    venv = make_venv(repo / ".venv")
    # A console script as pip writes it (shebang at the repository's path), and an editable
    # install of the project (a .pth naming the repository).
    script = venv / "bin" / "where"
    script.write_text(f"#!{venv}/bin/python\nimport sys, mod\nprint('prefix', sys.prefix)\nprint('X', mod.X)\n")
    script.chmod(0o755)
    (site_packages(venv) / "_project.pth").write_text(f"{repo}\n")
    python, workspace, sandbox = sandbox_for(repo, tmp_path / "state", {"HOME": str(tmp_path / "home"), "PATH": ""})
    assert python.venv == repo / ".venv" and python.problem is None, python
    workspace.write("mod.py", b"X = 2\n")
    out = run(sandbox, workspace, "python3 -c 'import sys; print(sys.prefix)'; where; echo venv=$VIRTUAL_ENV;"
                                  f" echo hacked > {repo}/mod.py; cat mod.py")
    assert f"{repo}/.venv\n" in out and f"prefix {repo}/.venv" in out, out
    assert "X 2" in out, out  # the edited file, not the user's
    assert f"venv={repo}/.venv" in out
    assert (repo / "mod.py").read_text() == "X = 1\n"  # writes through the repository's path stay in the workspace
    assert workspace.read("mod.py") == b"hacked\n"


def test_an_activated_venv_is_read_only_and_shows_nothing_beside_it(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "setup.py").write_text("")
    venv = make_venv(tmp_path / "envs" / "proj")
    (tmp_path / "envs" / "secret.txt").write_text("TOP-SECRET-CONTENT\n")
    bandit = venv / "bin" / "bandit"
    bandit.write_text("#!/bin/sh\necho bandit\n")
    bandit.chmod(0o755)
    environ = {"HOME": str(tmp_path / "home"), "VIRTUAL_ENV": str(venv), "PATH": f"{venv}/bin:/usr/bin"}
    python, workspace, sandbox = sandbox_for(repo, tmp_path / "state", environ)
    assert python.binds[0] == venv and python.base is not None
    out = run(sandbox, workspace, f"python3 -c 'import sys; print(sys.prefix)'; touch {venv}/x && echo WROTE;"
                                  f" ls -A {venv.parent}; cat {tmp_path}/envs/secret.txt;"
                                  f" touch {python.base.prefix}/y && echo WROTE-BASE; echo home=$HOME")
    assert f"{venv}\n" in out and "WROTE" not in out, out
    assert "TOP-SECRET-CONTENT" not in out and "secret.txt\n" not in out, out
    assert not (venv / "x").exists()
    assert "home=/tmp" in out
    # The scanners of the user's environment are seen (item 9: bandit was "not installed").
    plan = detect(workspace.path, None, sandbox_which(sandbox, workspace.path))
    assert any(c.name == "bandit" for c in plan.checks), plan.describe()
    assert not any("bandit is not installed" in n for n in plan.notes)


def test_the_sandbox_uid_reads_the_venv(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # As root the commands run as an unprivileged uid: a venv only its owner can read fails
    # to start, and that is said before it is tried, by the notes and by the doctor.
    repo = tmp_path / "repo"
    repo.mkdir()
    venv = make_venv(tmp_path / "private")
    monkeypatch.setenv("VIRTUAL_ENV", str(venv))
    (venv / "lib").chmod(0o700)
    try:
        python = with_access_check(find_python(repo, None, {"HOME": str(tmp_path), "VIRTUAL_ENV": str(venv)}),
                                   repo, sandboxed=True)
        report = project_report(repo)
    finally:
        (venv / "lib").chmod(0o755)
    if os.geteuid() == 0:
        assert python.problem is not None and "cannot read" in python.problem
        assert any(python.problem in line for line in describe_python(python))
        assert not report["sandbox_can_read"] and "uid 61000" in report["problem"]
        console = Console(record=True, width=400)
        print_project(report, console)
        assert "sandbox can read it: NO: the sandbox runs commands as uid 61000" in console.export_text()
    else:
        assert python.problem is None and report["sandbox_can_read"]  # commands run as the user, who owns it
