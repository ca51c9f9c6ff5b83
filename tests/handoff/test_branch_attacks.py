"""A repository's own git config cannot make the branch hand-off run a program: hooks (a
hooks path, the reference-transaction hook `update-ref` fires), a signing program with
`commit.gpgSign`, an fsmonitor, clean filters on the committed files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codeloop.cli import main
from codeloop.workspace.safe_git import git_text

pytestmark = pytest.mark.security


def _evil(tmp_path: Path, name: str) -> tuple[Path, Path]:
    """A program that leaves a marker when run, and the marker's path."""
    marker = tmp_path / f"ran-{name}"
    prog = tmp_path / f"evil-{name}"
    prog.write_text(f"#!/bin/sh\ntouch {marker}\ncat\n")
    prog.chmod(0o755)
    return prog, marker


def _hooks(tmp_path: Path, where: Path) -> list[Path]:
    where.mkdir(parents=True, exist_ok=True)
    markers = []
    for hook in ("reference-transaction", "pre-commit", "post-commit", "commit-msg",
                 "post-index-change", "post-checkout"):
        prog, marker = _evil(tmp_path, hook)
        (where / hook).write_text(prog.read_text())
        (where / hook).chmod(0o755)
        markers.append(marker)
    return markers


def test_repository_config_runs_nothing(session: str, repo: Path, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    markers = _hooks(tmp_path, repo / ".git" / "hooks")
    markers += _hooks(tmp_path / "elsewhere", tmp_path / "elsewhere" / "hooks")
    gpg, gpg_marker = _evil(tmp_path, "gpg")
    fsmon, fsmon_marker = _evil(tmp_path, "fsmonitor")
    clean, clean_marker = _evil(tmp_path, "clean")
    markers += [gpg_marker, fsmon_marker, clean_marker]
    with (repo / ".git" / "config").open("a") as f:
        f.write(f"[core]\n\thooksPath = {tmp_path / 'elsewhere' / 'hooks'}\n"
                f"\tfsmonitor = {fsmon}\n"
                f"[commit]\n\tgpgSign = true\n[gpg]\n\tprogram = {gpg}\n"
                f"[filter \"evil\"]\n\tclean = {clean}\n\tsmudge = {clean}\n")
    (repo / ".git" / "info").mkdir(exist_ok=True)
    (repo / ".git" / "info" / "attributes").write_text("* filter=evil\n")
    assert main(["apply", session, "--branch", "safe", "--commit", "--json"]) == 0
    commit = json.loads(capsys.readouterr().out)["commit"]
    assert [m.name for m in markers if m.exists()] == []
    # The blob is the session's bytes, not a filter's output.
    shown = git_text(["cat-file", "blob", f"{commit}:src/app.py"], repo).stdout
    assert shown == "def main():\n    return 5\n"
    assert git_text(["cat-file", "commit", commit], repo).stdout.count("gpgsig") == 0
