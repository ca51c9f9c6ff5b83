"""The bundled ripgrep is used when codeloop runs from a virtualenv that is not activated
(`.venv/bin/codeloop`, pipx): PATH lacks the environment's scripts directory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.test_cli import env_for
from tests.session.helpers import make_repo

# A PATH as a login shell has it, without any Python environment's scripts directory.
BARE_PATH = "/usr/bin:/bin"


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A virtualenv over this interpreter's packages (ripgrep among them), not activated."""
    where = tmp_path_factory.mktemp("venv") / ".venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip",
                    str(where)], check=True, capture_output=True, timeout=120)
    return where


def _codeloop(venv: Path, tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = env_for(tmp, PATH=BARE_PATH)
    env.pop("VIRTUAL_ENV", None)
    return subprocess.run([str(venv / "bin" / "python"), "-m", "codeloop", *args], env=env,
                          capture_output=True, text=True, timeout=240, cwd=tmp)


def test_no_rg_on_the_bare_path() -> None:
    """The premise of this module: the tests below would fall back without the fix."""
    found = [d for d in BARE_PATH.split(":") if os.access(Path(d) / "rg", os.X_OK)]
    if found:
        pytest.skip(f"this machine has rg in {found[0]}; the lookup cannot be told apart")


def test_doctor_names_the_ripgrep_beside_the_environment(venv: Path, tmp_path: Path) -> None:
    out = _codeloop(venv, tmp_path, "doctor", "--json")
    assert out.returncode == 0, out.stderr
    grep = json.loads(out.stdout)["grep"]
    assert grep["engine"] == "ripgrep", grep
    assert Path(grep["path"]).is_file() and grep["version"]
    assert not any(Path(grep["path"]).parent == Path(d) for d in BARE_PATH.split(":"))

    table = _codeloop(venv, tmp_path, "doctor")
    assert table.returncode == 0, table.stderr
    assert f"ripgrep {grep['version']} at" in table.stdout
    assert "Python fallback" not in table.stdout


def test_doctor_prints_its_table_once(venv: Path, tmp_path: Path) -> None:
    out = _codeloop(venv, tmp_path, "doctor")
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("codeloop sandbox capabilities") == 1
    assert out.stdout.count("overlay workspace mounts") == 1


def test_the_grep_tool_runs_ripgrep_and_says_so(venv: Path, tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    script = tmp_path / "script.json"
    script.write_text(json.dumps([
        {"tool_calls": [{"name": "grep", "arguments": {"pattern": "return a - b"}}]},
        {"tool_calls": [{"name": "finish", "arguments": {"summary": "found it"}}]},
    ]))
    out = _codeloop(venv, tmp_path, "run", "find the bug", "--repo", str(repo),
                    "--model", f"scripted:{script}", "--json")
    assert out.returncode == 0, out.stderr
    events = [json.loads(line) for line in out.stdout.splitlines()]
    grep = next(e for e in events if e["type"] == "tool_call_finished" and e["name"] == "grep")
    assert grep["ok"] and "calc.py:2:    return a - b" in grep["output"]
    assert grep["data"]["engine"] == "ripgrep"
