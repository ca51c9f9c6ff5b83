"""`codeloop doctor` says whether sessions get a network, and to which hosts."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.test_cli import cli


def test_doctor_shows_no_network_by_default(tmp_path: Path) -> None:
    out = cli(tmp_path, "doctor", "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["network"]["mode"] in ("off",)
    text = cli(tmp_path, "doctor").stdout
    assert "network: off" in text and "[network] allow" in text


def test_doctor_shows_the_allow_list(tmp_path: Path) -> None:
    config = tmp_path / "config" / "codeloop"
    config.mkdir(parents=True)
    (config / "config.toml").write_text(
        '[network]\nallow = ["pypi.org", "*.pythonhosted.org", "127.0.0.1:8080"]\n')
    report = json.loads(cli(tmp_path, "doctor", "--json").stdout)["network"]
    assert report["allow"] == ["pypi.org", "*.pythonhosted.org", "127.0.0.1:8080"]
    text = cli(tmp_path, "doctor").stdout
    if report["mode"] == "proxy":  # bwrap isolates here
        assert "allowed hosts: pypi.org, *.pythonhosted.org, 127.0.0.1:8080" in text
    else:
        assert "under Docker" in report["detail"]


def test_doctor_reports_a_bad_allow_list_entry(tmp_path: Path) -> None:
    config = tmp_path / "config" / "codeloop"
    config.mkdir(parents=True)
    (config / "config.toml").write_text('[network]\nallow = ["10.0.0.1"]\n')
    report = json.loads(cli(tmp_path, "doctor", "--json").stdout)["network"]
    assert report["mode"] == "unknown" and "ADDRESS:PORT" in report["detail"]
