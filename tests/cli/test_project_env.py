"""The real CLI, in a pseudo-terminal, on projects whose tests need their own environment: a
`.venv` in the repository, an activated virtualenv outside it, and one that lacks pytest
(issue 17, item 1). pytest is copied into the virtualenvs from this Python's own install."""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.cli.pty_driver import Screen, run_in_pty
from tests.cli.test_cli import cli
from tests.llm.fake_server import FakeProvider, Reply, openai_stream
from tests.session.helpers import git

SGR = re.compile(r"\x1b\[[0-9;]*m")
FULL_COMMAND_MARK = "--continue-on-collection-errors"


@dataclass(frozen=True)
class Projects:
    own_venv: Path  # a repository with its .venv, pytest in it
    external: Path  # a repository without one ...
    venv: Path  # ... and the virtualenv (pytest in it) the user activated for it
    no_pytest: Path  # a repository whose .venv lacks pytest


def make_project(root: Path) -> Path:
    (root / "tests").mkdir(parents=True)
    (root / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (root / "tests" / "test_calc.py").write_text(
        "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n")
    (root / "pyproject.toml").write_text('[tool.pytest.ini_options]\ntestpaths = ["tests"]\n')
    (root / ".gitignore").write_text(".venv/\n")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "init")
    return root


def make_venv(path: Path, with_pytest: bool) -> Path:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    if with_pytest:
        install_offline(path, "pytest")
    return path


def install_offline(venv: Path, *names: str) -> None:
    """Copy these installed distributions, and those they require, into `venv`: tests never
    reach a package index, and the venv's Python is this one, so the files fit."""
    [site] = (venv / "lib").glob("python*/site-packages")
    todo, seen = list(names), set()
    while todo:
        name = canonicalize_name(todo.pop())
        if name in seen:
            continue
        seen.add(name)
        dist = importlib.metadata.distribution(name)
        for file in dist.files or []:
            source = Path(str(dist.locate_file(file)))
            if ".." not in file.parts and source.is_file():  # scripts live outside site
                (site / file).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, site / file)
        for line in dist.requires or []:
            need = Requirement(line)
            if need.marker is None or need.marker.evaluate({"extra": ""}):
                todo.append(need.name)


@pytest.fixture(scope="module")
def projects(tmp_path_factory: pytest.TempPathFactory) -> Projects:
    top = tmp_path_factory.mktemp("projects")
    own = make_project(top / "own")
    make_venv(own / ".venv", with_pytest=True)
    bare = make_project(top / "bare")
    venv = make_venv(top / "envs" / "bare-env", with_pytest=True)
    broken = make_project(top / "broken")
    make_venv(broken / ".venv", with_pytest=False)
    return Projects(own, bare, venv, broken)


def replies() -> list[Reply]:
    """The model's turns, as the local OpenAI-compatible server streams them."""
    return [
        Reply(sse=openai_stream("", [("c1", "edit_file", json.dumps(
            {"path": "calc.py", "old": "return a - b", "new": "return a + b"}))])),
        Reply(sse=openai_stream("", [("c2", "run_tests", "{}")])),
        Reply(sse=openai_stream("Tests pass.", [("c3", "finish", '{"summary": "Tests pass."}')])),
    ]


def session(tmp: Path, repo: Path, **env: str) -> tuple[Screen, str]:
    fake = FakeProvider(replies=replies()).start()
    try:
        screen = run_in_pty(tmp, "run", "make the tests pass", "--repo", str(repo),
                            "--model", "openai:gpt-4o", "--base-url", fake.url + "/v1",
                            OPENAI_API_KEY="sk-test", **env)
    finally:
        fake.stop()
    return screen, SGR.sub("", screen.text)


def assert_verified_with(tmp: Path, screen: Screen, text: str, python: Path) -> None:
    assert screen.code == 0, text[-3000:] + screen.err.decode()
    assert f"python: {python}" in text, text
    assert "could not run" not in text and "No module named pytest" not in text
    assert "tests/test_calc.py::test_add" in text and "status finished" in text
    # The long test command is shown once (in the summary); the live view shortens it.
    assert text.count(FULL_COMMAND_MARK) == 1, text
    sid = json.loads(cli(tmp, "sessions", "--json").stdout)[0]["id"]
    events = [json.loads(line) for line in cli(tmp, "show", sid, "--json").stdout.splitlines()]
    commands = [c for e in events if e["type"] == "verification_ran" for c in e["commands"]]
    assert commands and all(FULL_COMMAND_MARK in c for c in commands)  # in full for machines


def test_a_project_with_its_own_venv(projects: Projects, tmp_path: Path) -> None:
    screen, text = session(tmp_path, projects.own_venv)
    assert_verified_with(tmp_path, screen, text, projects.own_venv / ".venv" / "bin" / "python")


def test_a_project_with_an_activated_external_venv(projects: Projects, tmp_path: Path) -> None:
    screen, text = session(tmp_path, projects.external, VIRTUAL_ENV=str(projects.venv),
                           PATH=f"{projects.venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}")
    assert_verified_with(tmp_path, screen, text, projects.venv / "bin" / "python")


def test_a_project_whose_environment_lacks_pytest_is_not_verified(projects: Projects, tmp_path: Path) -> None:
    screen, text = session(tmp_path, projects.no_pytest)
    assert "could not run the tests: " in text and "No module named pytest" in text, text
    assert "status needs_human" in text and "status finished" not in text
    assert "FIXED" not in text and "Verification passed" not in text
    assert screen.code == 5
    listed = json.loads(cli(tmp_path, "sessions", "--json").stdout)
    assert listed[0]["status"] == "needs_human"


def test_doctor_says_which_interpreter_and_test_command_and_why(projects: Projects, tmp_path: Path) -> None:
    out = cli(tmp_path, "doctor", "--repo", str(projects.own_venv))
    assert out.returncode == 0, out.stderr
    text = " ".join(out.stdout.split())  # lines wrap at the terminal's width
    assert f"python: {projects.own_venv / '.venv' / 'bin' / 'python'}" in text
    assert "why: the repository's .venv" in text and "sandbox can read it: yes" in text
    assert "test command: PYTHONDONTWRITEBYTECODE=1 python3 -m pytest" in text and "(detected)" in text
    short = cli(tmp_path, "doctor", "-C", str(projects.no_pytest), "--json")
    report = json.loads(short.stdout)["project"]
    assert report["python"] == str(projects.no_pytest / ".venv" / "bin" / "python")
    assert "pytest is not installed in this environment: the tests cannot run" in report["notes"]
    activated = cli(tmp_path, "doctor", "-C", str(projects.external), "--json", VIRTUAL_ENV=str(projects.venv))
    assert json.loads(activated.stdout)["project"]["why"] == "the activated virtualenv ($VIRTUAL_ENV)"
