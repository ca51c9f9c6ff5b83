"""Absorbing overlayfs upper layers: real ones produced by bwrap, and hand-made edge cases."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from tests.workspace.wstools import run_in_overlay, tree_hash

from codeloop.workspace.errors import WorkspaceError
from codeloop.workspace.overlay import OverlayWorkspace


def test_real_overlay_upper_is_absorbed(ws: OverlayWorkspace, repo: Path,
                                        overlay_scratch: Path) -> None:
    before = tree_hash(repo)
    script = """
set -e
printf 'def main():\\n    return 42\\n' > src/app.py
echo created > created.txt
rm README.md
rm -rf docs && mkdir docs && echo fresh > docs/only.md
chmod -x scripts/run.sh
mv src/util.py src/util2.py
ln -s created.txt alias.txt
mkfifo pipe
mkdir -p .git/hooks && echo 'touch /tmp/pwned' > .git/hooks/pre-commit
"""
    upper = run_in_overlay(ws, script, overlay_scratch)
    assert stat.S_ISCHR(os.lstat(upper / "README.md").st_mode)  # a real whiteout
    assert list((ws.state_dir / "layers").iterdir()) == []  # the layer was cleaned up
    changed = ws.absorb(upper)
    assert changed == ["README.md", "alias.txt", "created.txt", "docs/guide.md", "docs/only.md",
                       "scripts/run.sh", "src/app.py", "src/util.py", "src/util2.py"]
    assert sorted(ws.last_dropped) == [".git", "pipe"]
    assert tree_hash(repo) == before
    assert ws.read("src/app.py") == b"def main():\n    return 42\n"
    assert not (ws.path / "README.md").exists()
    assert ws.list("docs") == ["only.md"]
    assert os.readlink(ws.path / "alias.txt") == "created.txt"
    assert not (ws.path / "pipe").exists()
    assert not (ws.path / ".git/hooks/pre-commit").exists()
    statuses = {c.path: c.status for c in ws.changes()}
    assert statuses == {"README.md": "deleted", "alias.txt": "added", "created.txt": "added",
                        "docs/guide.md": "deleted", "docs/only.md": "added",
                        "scripts/run.sh": "mode", "src/app.py": "modified",
                        "src/util2.py": "renamed"}


def test_commands_see_earlier_tool_writes(ws: OverlayWorkspace, repo: Path,
                                          overlay_scratch: Path) -> None:
    ws.write("src/app.py", b"print('tool write')\n")
    upper = run_in_overlay(ws, "cat src/app.py > seen.txt", overlay_scratch)
    ws.absorb(upper)
    assert ws.read("seen.txt") == b"print('tool write')\n"
    assert not (repo / "seen.txt").exists()


def test_hand_made_opaque_directory_replaces_content(ws: OverlayWorkspace,
                                                    tmp_path: Path) -> None:
    upper = tmp_path / "upper"
    (upper / "src").mkdir(parents=True)
    (upper / "src/only.py").write_bytes(b"only\n")
    try:
        os.setxattr(upper / "src", "user.overlay.opaque", b"y")
    except OSError as exc:
        pytest.skip(f"this filesystem keeps no user xattrs: {exc}")
    assert ws.absorb(upper) == ["src/app.py", "src/only.py", "src/util.py"]
    assert ws.list("src") == ["only.py"]


def test_metacopy_upper_keeps_the_lower_data(ws: OverlayWorkspace, tmp_path: Path) -> None:
    upper = tmp_path / "upper"
    upper.mkdir()
    (upper / "README.md").write_bytes(b"")
    (upper / "README.md").chmod(0o755)
    try:
        os.setxattr(upper / "README.md", "user.overlay.metacopy", b"")
    except OSError as exc:
        pytest.skip(f"this filesystem keeps no user xattrs: {exc}")
    ws.absorb(upper)
    assert ws.read("README.md") == b"# demo\n"
    assert (ws.path / "README.md").stat().st_mode & 0o777 == 0o755


def test_redirected_directory_is_an_error_not_a_silent_loss(ws: OverlayWorkspace,
                                                            tmp_path: Path) -> None:
    upper = tmp_path / "upper"
    (upper / "moved").mkdir(parents=True)
    try:
        os.setxattr(upper / "moved", "user.overlay.redirect", b"/src")
    except OSError as exc:
        pytest.skip(f"this filesystem keeps no user xattrs: {exc}")
    with pytest.raises(WorkspaceError):
        ws.absorb(upper)


def test_file_replacing_a_directory(ws: OverlayWorkspace, tmp_path: Path) -> None:
    upper = tmp_path / "upper"
    upper.mkdir()
    (upper / "docs").write_bytes(b"now a file\n")
    assert ws.absorb(upper) == ["docs", "docs/guide.md"]
    assert ws.read("docs") == b"now a file\n"


def test_unreadable_modes_left_by_a_command_stay_readable(ws: OverlayWorkspace, repo: Path,
                                                          tmp_path: Path) -> None:
    upper = tmp_path / "upper"
    (upper / "locked").mkdir(parents=True)
    (upper / "locked/secret.txt").write_bytes(b"made unreadable\n")
    (upper / "locked/secret.txt").chmod(0o000)
    (upper / "locked").chmod(0o111)
    (upper / "src").mkdir()
    (upper / "src").chmod(0o750)
    assert ws.absorb(upper) == ["locked/secret.txt"]
    assert ws.read("locked/secret.txt") == b"made unreadable\n"
    assert (ws.path / "src").stat().st_mode & 0o777 == 0o750
    assert (repo / "src").stat().st_mode & 0o777 == 0o755
