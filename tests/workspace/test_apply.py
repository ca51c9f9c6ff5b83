"""Apply, conflicts, undo and discard; and the promise that nothing changes before apply."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from tests.workspace.wstools import run_in_overlay, tree_hash, visible_files

import codeloop.workspace.apply as apply_module
from codeloop.workspace.errors import ApplyFailed
from codeloop.workspace.overlay import OverlayWorkspace


def test_apply_writes_each_file_by_rename(ws: OverlayWorkspace, repo: Path,
                                          tmp_path: Path) -> None:
    outside_link = tmp_path / "second_name_of_app.py"
    os.link(repo / "src/app.py", outside_link)
    ws.write("src/app.py", b"applied\n")
    ws.write("pkg/new/mod.py", b"NEW = 1\n")
    ws.delete("docs/guide.md")
    result = ws.apply()
    assert result.applied == ["docs/guide.md", "pkg/new/mod.py", "src/app.py"]
    assert (result.conflicts, result.refused, result.checkpoint) == ([], {}, "1")
    assert (repo / "src/app.py").read_bytes() == b"applied\n"
    assert (repo / "pkg/new/mod.py").read_bytes() == b"NEW = 1\n"
    assert not (repo / "docs").exists()  # emptied by the deletion, gone in the merged view too
    # The user's old inode was replaced, not rewritten: its other name keeps the old bytes.
    assert outside_link.read_bytes() == b"def main():\n    return 1\n"
    assert visible_files(repo) == visible_files(ws.path)
    assert ws.changed_files() == []
    assert not list((repo / "src").glob(".*codeloop*"))


def test_apply_keeps_modes_and_symlinks(ws: OverlayWorkspace, repo: Path,
                                        overlay_scratch: Path) -> None:
    script = "chmod +x src/util.py && echo '#!/bin/sh' > tool.sh && chmod 755 tool.sh && " \
             "ln -s src/util.py alias.py"
    ws.absorb(run_in_overlay(ws, script, overlay_scratch))
    assert ws.apply().conflicts == []
    assert os.stat(repo / "src/util.py").st_mode & 0o777 == 0o755
    assert os.stat(repo / "tool.sh").st_mode & 0o777 == 0o755
    assert os.readlink(repo / "alias.py") == "src/util.py"


def test_conflict_stops_apply_and_changes_nothing(ws: OverlayWorkspace, repo: Path) -> None:
    ws.write("src/app.py", b"session version\n")
    ws.write("src/util.py", b"session util\n")
    ws.write("brand_new.txt", b"session\n")
    (repo / "src/app.py").write_bytes(b"user edited meanwhile\n")
    (repo / "brand_new.txt").write_bytes(b"user created it too\n")
    before = tree_hash(repo)
    result = ws.apply()
    assert result.conflicts == ["brand_new.txt", "src/app.py"]
    assert result.applied == [] and result.checkpoint is None
    assert tree_hash(repo) == before
    assert not (ws.state_dir / "checkpoints").exists()


def test_user_changes_elsewhere_do_not_conflict(ws: OverlayWorkspace, repo: Path) -> None:
    ws.write("src/app.py", b"session version\n")
    (repo / "README.md").write_bytes(b"user's own edit\n")
    result = ws.apply()
    assert result.applied == ["src/app.py"] and result.conflicts == []
    assert (repo / "README.md").read_bytes() == b"user's own edit\n"


def test_undo_restores_the_tree_byte_for_byte(ws: OverlayWorkspace, repo: Path) -> None:
    before = tree_hash(repo)
    ws.write("src/app.py", b"applied\n")
    ws.write("deep/new/file.txt", b"new\n")
    ws.delete("docs/guide.md")
    ws.delete("link.py")
    result = ws.apply()
    assert tree_hash(repo) != before
    restored = ws.undo()
    assert sorted(restored) == sorted(result.applied)
    assert tree_hash(repo) == before
    # After undo, the session's changes are pending again.
    assert ws.changed_files() == ["deep/new/file.txt", "docs/guide.md", "link.py", "src/app.py"]
    record = json.loads((ws.state_dir / "checkpoints/1/record.json").read_text())
    assert record["state"] == "undone"


def test_undo_refuses_to_overwrite_later_user_edits(ws: OverlayWorkspace, repo: Path) -> None:
    ws.write("src/app.py", b"applied\n")
    ws.apply()
    (repo / "src/app.py").write_bytes(b"user kept working\n")
    try:
        ws.undo()
    except Exception as exc:
        assert "src/app.py" in str(exc)
    else:
        raise AssertionError("undo overwrote a file the user changed after apply")
    assert (repo / "src/app.py").read_bytes() == b"user kept working\n"


def test_second_apply_gets_a_new_checkpoint(ws: OverlayWorkspace, repo: Path) -> None:
    ws.write("a.txt", b"1\n")
    assert ws.apply().checkpoint == "1"
    ws.write("a.txt", b"2\n")
    assert ws.apply().checkpoint == "2"
    ws.undo()
    assert (repo / "a.txt").read_bytes() == b"1\n"
    ws.undo()
    assert not (repo / "a.txt").exists()


def test_whole_session_leaves_the_repository_identical_until_apply(
        ws: OverlayWorkspace, repo: Path, overlay_scratch: Path) -> None:
    before = tree_hash(repo)
    ws.write("src/app.py", b"def main():\n    return 'tool'\n")
    ws.absorb(run_in_overlay(ws, "echo build > build.log && sed -i 's/1/9/' docs/guide.md && "
                             "rm -f README.md && chmod 755 src/util.py && mkdir -p out/x && "
                             "cp data/blob.bin out/x/copy.bin && git status >/dev/null 2>&1; "
                             "echo ok", overlay_scratch))
    ws.write("build.log", b"overwritten by a tool\n")
    ws.delete("out/x/copy.bin")
    ws.absorb(run_in_overlay(ws, "python3 -c \"open('gen.py','w').write('X=1\\\\n')\" "
                             "|| echo 'X=1' > gen.py", overlay_scratch))
    assert tree_hash(repo) == before
    assert ws.changed_files() == ["README.md", "build.log", "docs/guide.md", "gen.py",
                                  "src/app.py", "src/util.py"]
    assert ws.apply().conflicts == []
    assert visible_files(repo) == visible_files(ws.path)


def test_a_failure_part_way_puts_everything_back(ws: OverlayWorkspace, repo: Path,
                                                 tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    ws.write("README.md", b"written first\n")
    ws.write("src/zz.py", b"blocked\n")
    real_put = apply_module._put

    def swap_then_put(base_fd: int, rel: str, *args: object) -> None:
        if rel == "src/zz.py":  # the user's src/ turns into a symlink mid-apply
            (repo / "src").rename(repo / "src.moved")
            (repo / "src").symlink_to(elsewhere)
        real_put(base_fd, rel, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(apply_module, "_put", swap_then_put)
    with pytest.raises(ApplyFailed, match="put back"):
        ws.apply()
    assert (repo / "README.md").read_bytes() == b"# demo\n"
    assert list(elsewhere.iterdir()) == []


def test_another_process_sees_an_apply(ws: OverlayWorkspace, repo: Path,
                                       tmp_path: Path) -> None:
    ws.write("src/app.py", b"applied elsewhere\n")
    other = OverlayWorkspace(repo, tmp_path / "state")  # as `codeloop apply` would open it
    assert other.apply().applied == ["src/app.py"]
    assert ws.changed_files() == []  # the first object reloads the newer manifest
    ws.write("src/app.py", b"next change\n")
    assert ws.apply().conflicts == []
    assert (repo / "src/app.py").read_bytes() == b"next change\n"
