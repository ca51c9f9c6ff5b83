"""SECURITY.md attack cases that belong to the workspace: 1, 2, 4, 7, 9, 10, 11 and 39.

Each case asserts that the attack failed and that nothing outside changed. Cases that need a
real overlay skip with the printed reason where user namespaces are unavailable.
"""

from __future__ import annotations

import os
import socket
import stat
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

import codeloop.workspace.overlay as overlay_module
from codeloop.errors import PathOutsideWorkspace
from codeloop.workspace.errors import ProtectedPath, UnsafePath
from codeloop.workspace.factory import open_workspace
from codeloop.workspace.overlay import OverlayWorkspace
from codeloop.workspace.safe_git import git
from tests.workspace.wstools import (
    make_repo,
    open_overlay,
    overlay_scratch_dir,
    run_in_overlay,
    tree_hash,
)

pytestmark = pytest.mark.security

SECRET = b"TOP-SECRET-TOKEN\n"


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory beside the repository holding a secret the agent must never touch."""
    path = tmp_path / "outside"
    path.mkdir()
    (path / "secret.txt").write_bytes(SECRET)
    (path / "app.py").write_bytes(SECRET)
    return path


@pytest.fixture
def repo(tmp_path: Path, outside: Path) -> Path:
    path = tmp_path / "repo"
    path.mkdir()
    make_repo(path)
    (path / "leak.txt").symlink_to(outside / "secret.txt")
    (path / "leak_rel.txt").symlink_to("../outside/secret.txt")
    (path / "outdir").symlink_to(outside)
    return path


@pytest.fixture
def ws(repo: Path, tmp_path: Path) -> OverlayWorkspace:
    return open_overlay(repo, tmp_path / "state")


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    return overlay_scratch_dir(tmp_path)


def _untouched(outside: Path) -> None:
    assert sorted(p.name for p in outside.iterdir()) == ["app.py", "secret.txt"]
    assert (outside / "secret.txt").read_bytes() == SECRET
    assert (outside / "app.py").read_bytes() == SECRET


# (1) ../, absolute and ~ paths -------------------------------------------------------------

@pytest.mark.parametrize("bad", ["../outside/secret.txt", "src/../../outside/secret.txt",
                                 "/etc/passwd", "~/.ssh/id_rsa", "~root/.bashrc",
                                 "../escape.txt", "src/\x00.py"])
def test_1_paths_leaving_the_repository(ws: OverlayWorkspace, outside: Path, bad: str) -> None:
    calls: list[Callable[[], object]] = [
        lambda: ws.read(bad), lambda: ws.write(bad, b"pwn"), lambda: ws.delete(bad),
        lambda: ws.list(bad)]
    for call in calls:
        with pytest.raises(PathOutsideWorkspace):
            call()
    _untouched(outside)
    assert not (outside.parent / "escape.txt").exists()


# (2) symlinks to a secret, and a swap between check and use -------------------------------

@pytest.mark.parametrize("link", ["leak.txt", "leak_rel.txt", "outdir/secret.txt"])
def test_2_symlink_to_a_secret_is_not_followed(ws: OverlayWorkspace, outside: Path,
                                               link: str) -> None:
    with pytest.raises(PathOutsideWorkspace):
        ws.read(link)
    with pytest.raises(PathOutsideWorkspace):
        ws.write(link, b"overwritten")
    _untouched(outside)


def _swap_after_check(monkeypatch: pytest.MonkeyPatch, swap: Callable[[], None]) -> None:
    real = overlay_module.confine

    def confine_then_swap(root: Path, rel: str) -> Path:
        checked = real(root, rel)
        swap()
        return checked

    monkeypatch.setattr(overlay_module, "confine", confine_then_swap)


def test_2_parent_swapped_for_a_symlink_after_the_check(
        ws: OverlayWorkspace, outside: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src = ws.path / "src"

    def swap() -> None:
        if not src.is_symlink():
            src.rename(ws.path / "src.real")
            src.symlink_to(outside)

    _swap_after_check(monkeypatch, swap)
    with pytest.raises(UnsafePath):
        ws.read("src/app.py")
    src.unlink()
    (ws.path / "src.real").rename(src)
    with pytest.raises(UnsafePath):
        ws.write("src/app.py", b"pwned")
    _untouched(outside)


def test_2_file_swapped_for_a_symlink_after_the_check(
        ws: OverlayWorkspace, outside: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = ws.path / "README.md"

    def swap() -> None:
        if not target.is_symlink():
            target.unlink(missing_ok=True)
            target.symlink_to(outside / "secret.txt")

    _swap_after_check(monkeypatch, swap)
    with pytest.raises(UnsafePath):
        ws.write("README.md", b"must not reach the secret\n")
    target.unlink()
    with pytest.raises(UnsafePath):
        ws.read("README.md")
    _untouched(outside)


# (4) hard link to an outside file ----------------------------------------------------------

def test_4_hard_link_to_an_outside_file(repo: Path, tmp_path: Path, outside: Path) -> None:
    os.link(outside / "secret.txt", repo / "hard.txt")
    ws = open_workspace(repo, tmp_path / "state-hard")
    assert ws.read("hard.txt") == SECRET  # it is part of the user's repository
    ws.write("hard.txt", b"agent edit\n")
    _untouched(outside)
    assert ws.apply().conflicts == []
    assert (repo / "hard.txt").read_bytes() == b"agent edit\n"
    _untouched(outside)


def test_4_hard_link_written_by_a_command(repo: Path, tmp_path: Path, outside: Path,
                                          scratch: Path) -> None:
    os.link(outside / "secret.txt", repo / "hard.txt")
    ws = open_workspace(repo, tmp_path / "state-hard")
    ws.absorb(run_in_overlay(ws, "echo appended >> hard.txt && chmod 777 hard.txt", scratch))
    _untouched(outside)
    assert stat.S_IMODE((outside / "secret.txt").stat().st_mode) != 0o777
    assert ws.read("hard.txt") == SECRET + b"appended\n"


# (7) writing outside the workspace ----------------------------------------------------------

def test_7_writes_cannot_leave_the_workspace(ws: OverlayWorkspace, outside: Path,
                                             tmp_path: Path) -> None:
    for bad in ["../escape.txt", "outdir/new.txt", str(tmp_path / "escape.txt")]:
        with pytest.raises(PathOutsideWorkspace):
            ws.write(bad, b"pwn")
    assert not (tmp_path / "escape.txt").exists()
    _untouched(outside)


def test_7_absorb_does_not_follow_a_symlinked_directory(ws: OverlayWorkspace, outside: Path,
                                                        tmp_path: Path) -> None:
    upper = tmp_path / "upper"
    (upper / "outdir").mkdir(parents=True)
    (upper / "outdir/planted.txt").write_bytes(b"pwn\n")
    ws.absorb(upper)
    assert (ws.path / "outdir").is_dir() and not (ws.path / "outdir").is_symlink()
    _untouched(outside)


# (9) planting .git/hooks -------------------------------------------------------------------

def test_9_file_tools_cannot_plant_hooks(ws: OverlayWorkspace, repo: Path) -> None:
    before = tree_hash(repo / ".git")
    with pytest.raises(ProtectedPath):
        ws.write(".git/hooks/pre-commit", b"#!/bin/sh\ntouch /tmp/pwned\n")
    assert tree_hash(repo / ".git") == before


def test_9_commands_cannot_plant_hooks(ws: OverlayWorkspace, repo: Path, scratch: Path) -> None:
    before = tree_hash(repo)
    ws.absorb(run_in_overlay(
        ws, "mkdir -p .git/hooks vendor/.git && echo 'touch /tmp/pwned' > .git/hooks/pre-commit"
            " && chmod +x .git/hooks/pre-commit && echo x > vendor/.git/config && "
            "git config core.hooksPath /tmp 2>/dev/null; echo done", scratch))
    assert sorted(ws.last_dropped) == [".git", "vendor/.git"]
    assert not (ws.path / ".git/hooks/pre-commit").exists()
    assert ws.apply().refused == {}
    assert tree_hash(repo) == before


def test_9_apply_refuses_git_changes_planted_behind_its_back(ws: OverlayWorkspace,
                                                             repo: Path) -> None:
    ws.write("src/app.py", b"innocent change\n")
    (ws.path / ".git/hooks/post-checkout").write_bytes(b"#!/bin/sh\ntouch /tmp/pwned\n")
    before = tree_hash(repo)
    result = ws.apply()
    assert ".git/hooks/post-checkout" in result.refused
    assert result.applied == []
    assert tree_hash(repo) == before


# (10, 11) dangerous git configuration and repository-shipped drivers -----------------------

def _booby_trapped_repo(path: Path, marker_dir: Path) -> None:
    make_repo(path)
    hooks = path / "evil-hooks"
    hooks.mkdir()
    for hook in ("pre-commit", "post-commit", "post-checkout", "post-index-change"):
        (hooks / hook).write_text(f"#!/bin/sh\ntouch {marker_dir}/hook-{hook}\n")
        (hooks / hook).chmod(0o755)
    (path / ".git/hooks/pre-commit").write_text(f"#!/bin/sh\ntouch {marker_dir}/hook-local\n")
    (path / ".git/hooks/pre-commit").chmod(0o755)
    (path / ".gitattributes").write_text("* filter=evil diff=evil merge=evil\n")
    (path / "included.cfg").write_text(f"[core]\n\tsshCommand = touch {marker_dir}/ssh\n")
    settings = {
        "core.fsmonitor": f"touch {marker_dir}/fsmonitor; false",
        "core.hooksPath": str(hooks),
        "core.pager": f"touch {marker_dir}/pager; cat",
        "diff.external": f"touch {marker_dir}/diff-external",
        "filter.evil.clean": f"touch {marker_dir}/filter-clean; cat",
        "filter.evil.smudge": f"touch {marker_dir}/filter-smudge; cat",
        "filter.evil.required": "true",
        "diff.evil.textconv": f"touch {marker_dir}/textconv; cat",
        "diff.evil.command": f"touch {marker_dir}/diff-command",
        "include.path": str(path / "included.cfg"),
    }
    for key, value in settings.items():
        subprocess.run(["git", "config", key, value], cwd=path, check=True)


def test_10_11_host_git_runs_no_repository_programs(tmp_path: Path) -> None:
    markers = tmp_path / "markers"
    markers.mkdir()
    repo = tmp_path / "trapped"
    repo.mkdir()
    _booby_trapped_repo(repo, markers)
    # The trap is real: plain git runs the repository's fsmonitor.
    subprocess.run(["git", "status"], cwd=repo, capture_output=True, check=False)
    assert (markers / "fsmonitor").exists()
    for marker in markers.iterdir():
        marker.unlink()

    (repo / "src/app.py").write_text("changed\n")
    git(["status"], repo)
    git(["diff"], repo)
    git(["log", "-p", "-1"], repo)
    git(["add", "-A"], repo)
    git(["-c", "user.name=T", "-c", "user.email=t@example.invalid", "commit", "-qm", "x"], repo)
    git(["checkout", "-q", "HEAD~1", "--", "src/app.py"], repo)
    assert sorted(p.name for p in markers.iterdir()) == []


def test_11_ext_transport_submodule_is_refused(tmp_path: Path) -> None:
    markers = tmp_path / "markers"
    markers.mkdir()
    repo = tmp_path / "sub"
    repo.mkdir()
    make_repo(repo)
    (repo / ".gitmodules").write_text(
        f'[submodule "x"]\n\tpath = x\n\turl = ext::sh -c touch% {markers}/ext\n')
    head = git(["rev-parse", "HEAD"], repo).stdout.decode().strip()
    git(["update-index", "--add", "--cacheinfo", f"160000,{head},x"], repo)
    proc = git(["submodule", "update", "--init"], repo, check=False)
    assert proc.returncode != 0
    assert b"transport 'ext' not allowed" in proc.stderr
    assert list(markers.iterdir()) == []


# (39) overlay apply abuse -----------------------------------------------------------------

def test_39_setuid_and_setgid_files_are_refused(ws: OverlayWorkspace, repo: Path) -> None:
    ws.write("suid_tool", b"#!/bin/sh\n")
    ws.write("sgid_tool", b"#!/bin/sh\n")
    os.chmod(ws.path / "suid_tool", 0o4755)  # the session's own inode, not shared
    os.chmod(ws.path / "sgid_tool", 0o2755)
    before = tree_hash(repo)
    result = ws.apply()
    assert set(result.refused) == {"suid_tool", "sgid_tool"}
    assert "setuid" in result.refused["suid_tool"]
    assert tree_hash(repo) == before


def test_39_setuid_bit_set_by_a_command_is_refused(ws: OverlayWorkspace, repo: Path,
                                                   scratch: Path) -> None:
    ws.absorb(run_in_overlay(ws, "cp /bin/true mytrue && chmod 4755 mytrue", scratch))
    if not (ws.path / "mytrue").stat().st_mode & stat.S_ISUID:
        print("NOT EXERCISED: the kernel dropped the setuid bit inside the user namespace")
        pytest.skip("the setuid bit did not survive the sandbox")
    before = tree_hash(repo)
    assert "mytrue" in ws.apply().refused
    assert tree_hash(repo) == before


def test_39_fifos_and_sockets_are_refused(ws: OverlayWorkspace, repo: Path) -> None:
    os.mkfifo(ws.path / "fifo")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(ws.path / "sock"))
    before = tree_hash(repo)
    try:
        result = ws.apply()
    finally:
        sock.close()
    assert set(result.refused) == {"fifo", "sock"}
    assert all("FIFOs" in reason for reason in result.refused.values())
    assert tree_hash(repo) == before


def test_39_device_nodes_are_refused(ws: OverlayWorkspace, repo: Path) -> None:
    try:
        os.mknod(ws.path / "null", stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except PermissionError:
        print("NOT EXERCISED: creating a device node needs CAP_MKNOD")
        pytest.skip("NOT EXERCISED: creating a device node needs CAP_MKNOD (run as root)")
    before = tree_hash(repo)
    result = ws.apply()
    assert set(result.refused) == {"null"}
    assert tree_hash(repo) == before


def test_39_symlinks_pointing_outside_are_refused(ws: OverlayWorkspace, repo: Path,
                                                  scratch: Path) -> None:
    ws.absorb(run_in_overlay(ws, "ln -s /etc/passwd abs_out && ln -s ../../etc rel_out && "
                                 "ln -s src/app.py fine_link && ln -s ../x src/up_ok", scratch))
    before = tree_hash(repo)
    result = ws.apply()
    assert set(result.refused) == {"abs_out", "rel_out"}
    assert tree_hash(repo) == before


def test_39_apply_does_not_write_through_a_symlinked_parent(ws: OverlayWorkspace, repo: Path,
                                                            outside: Path) -> None:
    ws.write("docs/new.md", b"session doc\n")
    # After the session began, the user's docs/ became a link out of the repository.
    (repo / "docs").rename(repo / "docs.moved")
    (repo / "docs").symlink_to(outside)
    result = ws.apply()
    assert "docs/new.md" in result.refused
    assert result.applied == []
    _untouched(outside)


def test_39_removing_git_in_a_command_does_not_reach_the_repository(
        ws: OverlayWorkspace, repo: Path, scratch: Path) -> None:
    before = tree_hash(repo)
    ws.absorb(run_in_overlay(ws, "rm -rf .git", scratch))
    assert ".git" in ws.last_dropped
    assert (ws.path / ".git/HEAD").is_file()
    assert tree_hash(repo) == before
