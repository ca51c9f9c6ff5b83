"""An eval task's scratch directories: what a killed task left is cleared by the next one."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from tests.eval.scratch_helpers import dead_pid, orphans

from codeloop.eval.scratch import (
    KINDS,
    Kind,
    clear_orphans,
    machine,
    prefix,
    scratch_dir,
    task_dir,
)


@pytest.mark.parametrize("kind", KINDS)
def test_a_task_clears_what_tasks_of_dead_processes_left_and_nothing_else(
        tmp_path: Path, kind: Kind) -> None:
    work = tmp_path / "work"
    work.mkdir()
    gone = dead_pid()
    left = orphans(work, gone)
    running = work / f"{prefix(kind)}{os.getpid()}-{machine()}-def456"  # a live process's
    running.mkdir()
    # A work directory shared with another machine: its pids are not this machine's.
    elsewhere = work / f"{prefix(kind)}{gone}-0badf00d-ghi789"
    elsewhere.mkdir()
    older_judge = work / "codeloop-suite-judge-xyz"  # not named for a process
    older_judge.mkdir()
    old_style = work / f"{prefix(kind)}12345678"  # made before directories named their process
    old_style.mkdir()
    victim = tmp_path / "elsewhere"
    victim.mkdir()
    (victim / "keep.txt").write_text("mine\n")
    link = work / f"{prefix(kind)}{gone}-{machine()}-lnk"  # a link named like an orphan is not followed
    link.symlink_to(victim, target_is_directory=True)

    fresh = task_dir(work, kind)

    assert not any(path.exists() for path in left)
    assert running.is_dir() and older_judge.is_dir() and old_style.is_dir()
    assert elsewhere.is_dir()
    assert link.is_symlink() and (victim / "keep.txt").read_text() == "mine\n"
    assert fresh.is_dir() and fresh.parent == work
    assert fresh.name.startswith(f"{prefix(kind)}{os.getpid()}-{machine()}-")
    assert clear_orphans(work) == []  # this process's own directory stays


def test_a_scratch_directory_goes_at_the_end_of_its_block_locked_dirs_and_all(
        tmp_path: Path) -> None:
    # A sandboxed command's overlay leaves a mode-000 `work/work` directory behind.
    with scratch_dir(tmp_path, "judge") as tmp:
        locked = tmp / "venv-layer" / "work" / "work"
        locked.mkdir(parents=True)
        (locked / "x").write_text("x")
        locked.chmod(0)
    assert not tmp.exists()
    assert list(tmp_path.iterdir()) == []
