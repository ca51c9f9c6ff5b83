"""The host's safe file API: nothing below the root is reached through a link."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from codeloop.workspace import hostfs
from codeloop.workspace.errors import UnsafePath
from codeloop.workspace.hostfs import SafeRoot


@pytest.fixture(params=["openat2", "component-walk"])
def resolver(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run each test with the kernel's openat2 and with the O_NOFOLLOW walk it falls back to."""
    if request.param == "component-walk":
        monkeypatch.setattr(hostfs, "_openat2_works", False)
    return str(request.param)


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "mod.py").write_text("x = 1\n")
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "key").write_text("TOPSECRET\n")
    os.symlink(secret / "key", root / "leak")
    os.symlink(secret, root / "outdir")
    os.symlink("pkg", root / "inner")
    return root, secret


def test_reads_a_plain_file(resolver: str, tree: tuple[Path, Path]) -> None:
    root, _ = tree
    assert SafeRoot(root).read_bytes("pkg/mod.py") == b"x = 1\n"
    assert SafeRoot(root).read_bytes(root / "pkg" / "mod.py", limit=2) == b"x "


@pytest.mark.parametrize("rel", ["leak", "outdir/key", "inner/mod.py"])
def test_never_reads_through_a_link(resolver: str, tree: tuple[Path, Path], rel: str) -> None:
    root, _ = tree
    with pytest.raises(UnsafePath):
        SafeRoot(root).read_bytes(rel)
    assert SafeRoot(root).read_if_file(rel) is None


@pytest.mark.parametrize("rel", ["../secret/key", "/etc/passwd", "pkg/../../secret/key"])
def test_refuses_paths_that_leave_the_root(resolver: str, tree: tuple[Path, Path],
                                          rel: str) -> None:
    root, _ = tree
    with pytest.raises(UnsafePath):
        SafeRoot(root).read_bytes(rel)


def test_stat_reports_links_as_links(resolver: str, tree: tuple[Path, Path]) -> None:
    root, _ = tree
    safe = SafeRoot(root)
    assert safe.is_symlink("leak") and not safe.is_file("leak")
    assert not safe.exists("outdir/key")
    assert safe.is_dir("pkg") and safe.is_file("pkg/mod.py")


def test_walk_lists_links_but_never_enters_them(resolver: str, tree: tuple[Path, Path]) -> None:
    root, _ = tree
    seen = {e.rel: e for e in SafeRoot(root).walk()}
    assert set(seen) == {"pkg/mod.py", "leak", "outdir", "inner"}
    assert seen["outdir"].is_symlink and not seen["pkg/mod.py"].is_symlink


def test_write_replaces_a_link_instead_of_writing_through_it(
        resolver: str, tree: tuple[Path, Path]) -> None:
    root, secret = tree
    SafeRoot(root).write_bytes("leak", b"mine\n")
    assert (secret / "key").read_text() == "TOPSECRET\n"
    assert not (root / "leak").is_symlink() and (root / "leak").read_bytes() == b"mine\n"


def test_write_refuses_a_linked_parent(resolver: str, tree: tuple[Path, Path]) -> None:
    root, secret = tree
    with pytest.raises(UnsafePath):
        SafeRoot(root).write_bytes("outdir/key", b"owned\n")
    assert (secret / "key").read_text() == "TOPSECRET\n"


def test_write_never_changes_a_hard_linked_file(resolver: str, tree: tuple[Path, Path]) -> None:
    root, secret = tree
    os.link(secret / "key", root / "hard")
    SafeRoot(root).write_bytes("hard", b"new\n")
    assert (secret / "key").read_text() == "TOPSECRET\n"
    assert (root / "hard").read_text() == "new\n"


def test_write_keeps_the_old_mode(resolver: str, tree: tuple[Path, Path]) -> None:
    root, _ = tree
    (root / "pkg" / "mod.py").chmod(0o755)
    SafeRoot(root).write_bytes("pkg/mod.py", b"y = 2\n")
    assert (root / "pkg" / "mod.py").stat().st_mode & 0o777 == 0o755
    SafeRoot(root).write_bytes("new/dir/file.txt", b"z\n")
    assert (root / "new" / "dir" / "file.txt").stat().st_mode & 0o777 == 0o644


def test_remove_takes_the_link_not_its_target(resolver: str, tree: tuple[Path, Path]) -> None:
    root, secret = tree
    assert SafeRoot(root).remove("outdir")
    assert (secret / "key").exists() and not (root / "outdir").exists()
    assert not SafeRoot(root).remove("missing")


def test_a_fifo_is_not_read(resolver: str, tree: tuple[Path, Path]) -> None:
    root, _ = tree
    os.mkfifo(root / "pipe")
    with pytest.raises(UnsafePath):
        SafeRoot(root).read_bytes("pipe")


def test_the_kernel_resolver_is_used_where_it_exists(tree: tuple[Path, Path]) -> None:
    root, _ = tree
    SafeRoot(root).read_bytes("pkg/mod.py")
    major, minor = (int(x) for x in os.uname().release.split(".")[:2])
    if (major, minor) < (5, 6):
        pytest.skip("openat2 needs Linux 5.6")
    assert hostfs._openat2_works is True
