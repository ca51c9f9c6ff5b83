from __future__ import annotations

import json
from pathlib import Path

import pytest

from codeloop.cli.edit_cmds import patch_command
from codeloop.edit.errors import NoMatch


def _patch(tmp_path: Path, text: str) -> str:
    p = tmp_path / "change.diff"
    p.write_text(text)
    return str(p)


def test_patch_command_applies_all_or_nothing(tmp_path, capsys):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "a.py").write_text("x = 1\n")
    (repo / "b.py").write_text("y = 1\n")
    good = _patch(tmp_path, "--- a/a.py\n+++ b/a.py\n@@\n-x = 1\n+x = 2\n")
    patch_command(good, repo=repo, file=None, dry_run=False, as_json=True)
    out = json.loads(capsys.readouterr().out)
    assert out["format"] == "unified" and out["files"][0]["strategy"] == "exact"
    assert (repo / "a.py").read_text() == "x = 2\n"
    bad = _patch(tmp_path, "a.py\n<<<<<<< SEARCH\nx = 2\n=======\nx = 3\n>>>>>>> REPLACE\n"
                           "b.py\n<<<<<<< SEARCH\nnope\n=======\ny = 2\n>>>>>>> REPLACE\n")
    with pytest.raises(NoMatch):
        patch_command(bad, repo=repo, file=None, dry_run=False, as_json=False)
    assert (repo / "a.py").read_text() == "x = 2\n"


def test_patch_command_dry_run_writes_nothing(tmp_path, capsys):
    repo = tmp_path / "repo"
    repo.mkdir()
    patch = _patch(tmp_path, "*** Begin Patch\n*** Add File: new.txt\n+hi\n*** End Patch\n")
    patch_command(patch, repo=repo, file=None, dry_run=True, as_json=True)
    assert json.loads(capsys.readouterr().out)["files"][0]["action"] == "create"
    assert not (repo / "new.txt").exists()
