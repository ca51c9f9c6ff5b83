"""`codeloop verify` on a small repository, without the sandbox (the CLI's --no-sandbox)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from codeloop.cli import app, main


@pytest.fixture
def repo(tmp_path: Path, write_tree, monkeypatch: pytest.MonkeyPatch, base_settings) -> Path:
    monkeypatch.setenv("CODELOOP_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    env = base_settings["env"]
    config = (
        "[verify]\n"
        f"python = {json.dumps(sys.executable)}\n"
        "lint = []\nsecurity = []\n"
        f"env = {{ PATH = {json.dumps(env['PATH'])}, PYTEST_DISABLE_PLUGIN_AUTOLOAD = \"1\" }}\n"
    )
    return write_tree(tmp_path / "repo", {
        ".codeloop/config.toml": config,
        "pytest.ini": "[pytest]\n",
        "test_things.py": "def test_ok():\n    assert True\n\n\ndef test_bad():\n    assert 1 + 1 == 3\n",
    })


def test_verify_json_reports_runs_and_exits_nonzero_on_failures(repo: Path) -> None:
    # CliRunner, not `main`: it reports the exit code the command raised.
    invoked = CliRunner().invoke(app, ["verify", "--repo", str(repo), "--no-sandbox", "--json"])
    assert invoked.exit_code == 1, invoked.output
    result = json.loads(invoked.output.strip().splitlines()[-1])
    assert (result["passed"], result["failed"]) == (1, 1)
    assert result["runs"][0]["failures"][0]["test_id"] == "test_things.py::test_bad"
    # Nothing was written into the repository, and the scratch workspace is gone.
    assert sorted(p.name for p in repo.iterdir()) == [".codeloop", "pytest.ini", "test_things.py"]
    assert not any((repo.parent / "data" / "verify-runs").iterdir())


def test_verify_plan_and_a_passing_target(repo: Path) -> None:
    plan = CliRunner().invoke(app, ["verify", "--repo", str(repo), "--no-sandbox", "--plan", "--json"])
    assert plan.exit_code == 0 and "--junitxml" in json.loads(plan.output)["plan"][0]
    ran = CliRunner().invoke(app, ["verify", "--repo", str(repo), "--no-sandbox", "-t", "test_things.py::test_ok"])
    assert ran.exit_code == 0, ran.output
    assert "failing" not in ran.output  # the failure listing only appears when something fails


def test_bad_verify_settings_are_a_clear_error(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (repo / ".codeloop" / "config.toml").write_text("[verify]\ntset = 'pytest'\n")
    assert main(["verify", "--repo", str(repo), "--no-sandbox"]) == 2
    assert "tset" in capsys.readouterr().err
