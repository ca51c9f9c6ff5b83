"""The session's diff: every kind of change, in a form `git apply` accepts."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from tests.workspace.wstools import visible_files

from codeloop.workspace.overlay import OverlayWorkspace
from codeloop.workspace.safe_git import git


def _make_all_kinds(ws: OverlayWorkspace) -> None:
    ws.write("src/app.py", b"def main():\n    return 2\n")
    ws.write("src/added.py", b"NEW = True\n")
    ws.delete("docs/guide.md")
    ws.write("moved/util_renamed.py", ws.read("src/util.py"))
    ws.delete("src/util.py")
    ws.write("data/blob.bin", b"\x00\x01changed")


def test_statuses_of_every_kind(ws: OverlayWorkspace) -> None:
    _make_all_kinds(ws)
    staged = ws.path / "scripts/.run.sh.new"
    staged.write_bytes(ws.read("scripts/run.sh"))
    staged.chmod(0o644)
    staged.replace(ws.path / "scripts/run.sh")  # a command's chmod -x, as absorb leaves it
    by_path = {c.path: c for c in ws.changes()}
    assert by_path["src/app.py"].status == "modified"
    assert by_path["src/added.py"].status == "added"
    assert by_path["docs/guide.md"].status == "deleted"
    assert by_path["moved/util_renamed.py"].status == "renamed"
    assert by_path["moved/util_renamed.py"].old_path == "src/util.py"
    assert "src/util.py" not in by_path
    assert by_path["data/blob.bin"].binary
    assert "Binary files a/data/blob.bin and b/data/blob.bin differ" in by_path["data/blob.bin"].diff
    mode = by_path["scripts/run.sh"]
    assert (mode.status, mode.old_mode, mode.new_mode) == ("mode", "100755", "100644")
    assert "old mode 100755\nnew mode 100644\n" in mode.diff
    text = ws.diff()
    assert "rename from src/util.py\nrename to moved/util_renamed.py" in text
    assert "new file mode 100644" in text and "deleted file mode 100644" in text


def test_symlink_and_type_changes(ws: OverlayWorkspace) -> None:
    os.unlink(ws.path / "link.py")
    os.symlink("src/util.py", ws.path / "link.py")
    ws.delete("README.md")
    os.symlink("docs/guide.md", ws.path / "README.md")
    by_path = {c.path: c for c in ws.changes()}
    assert by_path["link.py"].status == "modified"
    assert "-src/app.py" in by_path["link.py"].diff and "+src/util.py" in by_path["link.py"].diff
    assert by_path["README.md"].status == "type"
    assert "new file mode 120000" in by_path["README.md"].diff


def test_git_apply_reproduces_the_merged_view(ws: OverlayWorkspace, repo: Path,
                                              tmp_path: Path) -> None:
    ws.write("src/app.py", b"def main():\n    return 3\n")
    ws.write("src/added.py", b"NEW = True\n")
    ws.write("src/no_newline.py", b"x = 1")
    ws.delete("docs/guide.md")
    ws.write("moved/util.py", ws.read("src/util.py"))
    ws.delete("src/util.py")
    clone = tmp_path / "clone"
    shutil.copytree(repo, clone, symlinks=True)
    patch = tmp_path / "session.patch"
    patch.write_text(ws.diff())
    git(["apply", str(patch)], clone)
    assert visible_files(clone) == visible_files(ws.path)


def test_git_dir_changes_are_not_in_the_diff(ws: OverlayWorkspace) -> None:
    stray = ws.path / ".git/stray"
    stray.write_bytes(b"written behind the workspace's back\n")
    assert ws.changed_files() == []
    assert ws.diff() == ""
