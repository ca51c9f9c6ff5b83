"""The demo's closing hint works: every command it names succeeds on the demo session, and
`show` and `export` need only the log, even once the repository is gone."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from tests.cli.pty_driver import run_in_pty
from tests.cli.test_cli import cli

SGR = re.compile(r"\x1b\[[0-9;]*m")
NAMED = re.compile(r"codeloop (show|diff|apply|undo|export) ([0-9a-f]{12})((?: -o \S+)?)")
FIXED = "return sum(values) / len(values)"


def _demo(tmp: Path, *args: str) -> str:
    screen = run_in_pty(tmp, "demo", *args, timeout=120)
    text = SGR.sub("", screen.text)
    assert screen.code == 0, text[-2000:] + screen.err.decode()
    return text


def test_every_command_the_demo_names_at_the_end_works(tmp_path: Path) -> None:
    text = _demo(tmp_path)
    closing = text[text.index("final diff"):]
    named = list(dict.fromkeys(m.group(0) for m in NAMED.finditer(closing)))
    assert {m.split()[1] for m in named} == {"show", "diff", "apply", "undo", "export"}
    repo = Path(re.search(r"stays at (\S+?);", closing).group(1))  # type: ignore[union-attr]
    assert repo.is_relative_to(tmp_path / "data")
    for command in named:
        out = cli(tmp_path, *command.split()[1:])
        assert out.returncode == 0, f"{command}: {out.stdout[-1000:]}{out.stderr}"
        assert "Traceback" not in out.stderr
        if " apply " in f" {command} ":
            assert FIXED in (repo / "stats.py").read_text()
        if " undo " in f" {command} ":
            assert FIXED not in (repo / "stats.py").read_text()
    doc = json.loads((tmp_path / "demo.json").read_text())
    assert FIXED in doc["diff"] and doc["diff_source"] == "workspace"


def test_show_and_export_need_only_the_log(tmp_path: Path) -> None:
    kept = tmp_path / "kept"
    _demo(tmp_path, "--keep", str(kept))
    sid = json.loads(cli(tmp_path, "sessions", "--json").stdout)[0]["id"]
    shutil.rmtree(kept)

    shown = cli(tmp_path, "show", sid)
    assert shown.returncode == 0, shown.stderr
    assert "repository gone" in shown.stdout and FIXED in shown.stdout
    exported = cli(tmp_path, "export", sid)
    assert exported.returncode == 0, exported.stderr
    doc = json.loads(exported.stdout)
    assert FIXED in doc["diff"] and doc["diff_source"] == "log"
    # What needs the repository says so, and what still works.
    diff = cli(tmp_path, "diff", sid)
    assert diff.returncode == 2 and "Traceback" not in diff.stderr
    assert "is gone" in diff.stderr and f"codeloop show {sid}" in diff.stderr
