"""Read-through and write-aside behaviour of the hard-link-farm workspace."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from tests.workspace.wstools import tree_hash, visible_files

from codeloop.workspace.errors import ProtectedPath, WorkspaceError, WorkspaceStateError
from codeloop.workspace.factory import open_workspace
from codeloop.workspace.farm import seal
from codeloop.workspace.overlay import OverlayWorkspace


def test_read_through_sees_the_users_files(ws: OverlayWorkspace, repo: Path) -> None:
    assert ws.kind == "overlay"
    assert ws.read("src/app.py") == (repo / "src/app.py").read_bytes()
    assert ws.read("link.py") == (repo / "src/app.py").read_bytes()
    assert ws.list("src") == ["app.py", "util.py"]
    assert ".git" in ws.list()
    assert ws.changed_files() == []
    assert ws.diff() == ""


def test_merged_view_is_a_hard_link_farm(ws: OverlayWorkspace, repo: Path) -> None:
    assert os.stat(ws.path / "src/app.py").st_ino == os.stat(repo / "src/app.py").st_ino
    assert os.readlink(ws.path / "link.py") == "src/app.py"
    assert (ws.path / "scripts/run.sh").stat().st_mode & 0o111


def test_write_lands_aside_and_never_changes_the_shared_inode(
        ws: OverlayWorkspace, repo: Path) -> None:
    before = tree_hash(repo)
    original_ino = os.stat(repo / "src/app.py").st_ino
    ws.write("src/app.py", b"changed\n")
    ws.write("src/new/deep.py", b"x = 1\n")
    ws.delete("docs/guide.md")
    assert tree_hash(repo) == before
    assert (repo / "src/app.py").read_bytes() == b"def main():\n    return 1\n"
    assert os.stat(repo / "src/app.py").st_ino == original_ino
    assert ws.read("src/app.py") == b"changed\n"
    assert ws.changed_files() == ["docs/guide.md", "src/app.py", "src/new/deep.py"]


def test_write_keeps_the_files_mode(ws: OverlayWorkspace) -> None:
    ws.write("scripts/run.sh", b"#!/bin/sh\necho other\n")
    assert (ws.path / "scripts/run.sh").stat().st_mode & 0o777 == 0o755
    assert ws.changed_files() == ["scripts/run.sh"]


def test_writing_the_same_bytes_is_no_change(ws: OverlayWorkspace, repo: Path) -> None:
    ws.write("README.md", (repo / "README.md").read_bytes())
    assert ws.changed_files() == []


def test_the_users_own_edits_are_not_session_changes(ws: OverlayWorkspace, repo: Path) -> None:
    (repo / "README.md").write_bytes(b"edited by the user in place\n")
    tmp = repo / "src/util.py.tmp"
    tmp.write_bytes(b"replaced by the user\n")
    tmp.replace(repo / "src/util.py")
    (repo / "user_new.txt").write_bytes(b"new\n")
    assert ws.changed_files() == []


def test_git_dir_is_protected_from_file_tools(ws: OverlayWorkspace) -> None:
    with pytest.raises(ProtectedPath):
        ws.write(".git/config", b"[core]\n")
    with pytest.raises(ProtectedPath):
        ws.delete(".git/HEAD")
    with pytest.raises(ProtectedPath):
        ws.write("vendor/.GIT/hooks/pre-commit", b"#!/bin/sh\n")


def test_absolute_paths_into_the_repository_are_accepted(ws: OverlayWorkspace,
                                                         repo: Path) -> None:
    ws.write(str(repo / "README.md"), b"via absolute path\n")
    assert ws.read("README.md") == b"via absolute path\n"
    assert (repo / "README.md").read_bytes() == b"# demo\n"


def test_delete_of_a_symlink_removes_the_link_not_its_target(ws: OverlayWorkspace) -> None:
    ws.delete("link.py")
    assert not (ws.path / "link.py").is_symlink()
    assert (ws.path / "src/app.py").is_file()
    assert ws.changed_files() == ["link.py"]


def test_delete_of_a_directory(ws: OverlayWorkspace) -> None:
    ws.delete("src")
    assert ws.changed_files() == ["src/app.py", "src/util.py"]
    with pytest.raises(FileNotFoundError):
        ws.delete("src")


def test_resume_reopens_the_same_workspace(ws: OverlayWorkspace, repo: Path,
                                           tmp_path: Path) -> None:
    ws.write("src/app.py", b"session work\n")
    again = open_workspace(repo, tmp_path / "state")
    assert again.path == ws.path
    assert again.read("src/app.py") == b"session work\n"
    assert again.changed_files() == ["src/app.py"]


def test_state_dir_belongs_to_one_repository(ws: OverlayWorkspace, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    with pytest.raises(WorkspaceStateError):
        open_workspace(other, tmp_path / "state")


def test_state_dir_inside_the_repository_is_refused(repo: Path) -> None:
    with pytest.raises(WorkspaceError):
        open_workspace(repo, repo / ".codeloop")


def test_discard_drops_the_changes(ws: OverlayWorkspace, repo: Path) -> None:
    before = tree_hash(repo)
    ws.write("src/app.py", b"throwaway\n")
    ws.delete("README.md")
    ws.discard()
    assert ws.changed_files() == []
    assert ws.read("src/app.py") == (repo / "src/app.py").read_bytes()
    assert tree_hash(repo) == before


def test_copy_mode_detects_in_place_writes(repo: Path, tmp_path: Path) -> None:
    ws = open_workspace(repo, tmp_path / "copy-state", prefer="copy")
    assert ws.kind == "copy"
    assert os.stat(ws.path / "README.md").st_ino != os.stat(repo / "README.md").st_ino
    before = tree_hash(repo)
    # In copy mode commands may write the files directly; the scan must notice in-place edits.
    with open(ws.path / "README.md", "ab") as f:
        f.write(b"appended in place\n")
    os.chmod(ws.path / "src/util.py", 0o755)
    assert ws.changed_files() == ["README.md", "src/util.py"]
    assert tree_hash(repo) == before
    assert visible_files(ws.path)["README.md"].endswith(b"appended in place\n")


def test_another_filesystem_falls_back_to_a_copy(repo: Path, tmp_path: Path) -> None:
    shm = Path("/dev/shm")
    if not shm.is_dir() or shm.stat().st_dev == tmp_path.stat().st_dev:
        print("NOT EXERCISED: no second filesystem (/dev/shm) beside the test directory")
        pytest.skip("no second filesystem to put the state on")
    # The state must live on another filesystem than the repository; removed at the end.
    with tempfile.TemporaryDirectory(dir=shm, prefix="codeloop-test-") as other:
        ws = open_workspace(repo, Path(other) / "state")
        assert ws.kind == "copy"
        before = tree_hash(repo)
        ws.write("src/app.py", b"edited\n")
        assert ws.changed_files() == ["src/app.py"]
        assert tree_hash(repo) == before
        assert ws.apply().applied == ["src/app.py"]
        assert (repo / "src/app.py").read_bytes() == b"edited\n"


def test_a_new_process_reopens_the_session(ws: OverlayWorkspace, repo: Path,
                                           tmp_path: Path) -> None:
    ws.write("src/app.py", b"from the first process\n")
    code = ("import sys; from pathlib import Path; "
            "from codeloop.workspace.factory import open_workspace; "
            "w = open_workspace(Path(sys.argv[1]), Path(sys.argv[2])); "
            "print(w.changed_files(), w.read('src/app.py'))")
    src = Path(__file__).resolve().parents[2] / "src"
    out = subprocess.run([sys.executable, "-c", code, str(repo), str(tmp_path / "state")],
                         env={**os.environ, "PYTHONPATH": str(src)}, capture_output=True,
                         text=True, check=True).stdout
    assert out.strip() == "['src/app.py'] b'from the first process\\n'"


def test_trusted_directory_stamps_still_reveal_changes(ws: OverlayWorkspace,
                                                       repo: Path) -> None:
    # Seal again a moment later so that every directory stamp is older than the seal and the
    # scan skips listing unchanged directories.
    time.sleep(0.05)
    seal(ws._manifest, ws.path, ws.state_dir / "sealed")
    assert set(ws._manifest.index().trusted) >= {"", "src", "docs", "scripts"}
    assert ws.changed_files() == []
    # Changes made behind the workspace's back, entry by entry, as a careless tool would.
    os.unlink(ws.path / "docs/guide.md")
    (ws.path / "src/extra.py").write_bytes(b"planted\n")
    staged = ws.path / "scripts/.tmp"
    staged.write_bytes(b"#!/bin/sh\necho other\n")
    staged.replace(ws.path / "scripts/run.sh")
    assert ws.changed_files() == ["docs/guide.md", "scripts/run.sh", "src/extra.py"]
