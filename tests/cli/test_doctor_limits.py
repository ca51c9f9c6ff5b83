"""`codeloop doctor` says what each sandboxed command may use, and whether `[limits]` set it."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.test_cli import cli


def _user_config(tmp_path: Path, text: str) -> None:
    config = tmp_path / "config" / "codeloop"
    config.mkdir(parents=True)
    (config / "config.toml").write_text(text)


def test_doctor_shows_the_defaults_and_how_to_change_them(tmp_path: Path) -> None:
    report = json.loads(cli(tmp_path, "doctor", "--json").stdout)["command_limits"]
    assert report["memory_mb"] == 4096 and report["max_processes"] >= 1024
    assert report["set"] == []
    text = " ".join(cli(tmp_path, "doctor").stdout.split())
    assert "4096 MB" in text and "(defaults; [limits] in the config changes them)" in text


def test_doctor_shows_the_limits_the_config_sets(tmp_path: Path) -> None:
    _user_config(tmp_path, "[budgets]\ncommand_timeout_s = 90\n"
                           "[limits]\nmemory_mb = 8192\nmax_processes = 2048\n")
    report = json.loads(cli(tmp_path, "doctor", "--json").stdout)["command_limits"]
    assert (report["timeout_s"], report["memory_mb"], report["max_processes"]) == (90, 8192, 2048)
    assert report["set"] == ["max_processes", "memory_mb"]
    text = " ".join(cli(tmp_path, "doctor").stdout.split())
    assert "90 s, 8192 MB, 2048 tasks" in text and "[limits] sets max_processes, memory_mb" in text


def test_doctor_names_a_bad_limit_instead_of_failing(tmp_path: Path) -> None:
    _user_config(tmp_path, "[limits]\nmemory_mb = 8\n")
    out = cli(tmp_path, "doctor", "--json")
    assert out.returncode == 0, out.stderr
    assert "limits.memory_mb" in json.loads(out.stdout)["command_limits"]["error"]
