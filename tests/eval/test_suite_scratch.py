"""An eval task's scratch directory: what a killed task left is cleared by the next one."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from codeloop.eval.suite.scratch import PREFIX, clear_orphans, task_dir


def dead_pid() -> int:
    """The pid of a process that has ended (and been reaped)."""
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    return int(proc.stdout)


def test_a_task_clears_what_tasks_of_dead_processes_left_and_nothing_else(
        tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    gone = dead_pid()
    orphan = work / f"{PREFIX}{gone}-abc123"
    (orphan / "repo").mkdir(parents=True)
    (orphan / "repo" / "calc.py").write_text("x = 1\n")
    running = work / f"{PREFIX}{os.getpid()}-def456"  # a live process's task
    running.mkdir()
    judge_dir = work / f"{PREFIX}judge-xyz"  # not named for a process
    judge_dir.mkdir()
    old_style = work / f"{PREFIX}12345678"  # made before directories named their process
    old_style.mkdir()
    victim = tmp_path / "elsewhere"
    victim.mkdir()
    (victim / "keep.txt").write_text("mine\n")
    link = work / f"{PREFIX}{gone}-lnk"  # a link named like an orphan is not followed
    link.symlink_to(victim, target_is_directory=True)

    fresh = task_dir(work)

    assert not orphan.exists()
    assert running.is_dir() and judge_dir.is_dir() and old_style.is_dir()
    assert link.is_symlink() and (victim / "keep.txt").read_text() == "mine\n"
    assert fresh.is_dir() and fresh.parent == work
    assert fresh.name.startswith(f"{PREFIX}{os.getpid()}-")
    assert clear_orphans(work) == []  # this process's own directory stays
