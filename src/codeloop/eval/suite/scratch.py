"""Each eval task's scratch directory, and what killed tasks left of theirs.

A task's checkout, session state and judge run live in one directory, removed when the
task ends; a process killed mid-task (a Ray worker lost, `kill -9`) cannot remove it, and
those piled up in the temp directory of every machine that ran tasks. A directory is named
for the process that made it, so the next task (or the run's end) on the same machine
removes those whose process is gone.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from pathlib import Path

PREFIX = "codeloop-suite-"


def task_dir(work_dir: Path | None) -> Path:
    """A new scratch directory for one task in `work_dir` (the temp directory if None),
    after clearing the ones dead processes left there."""
    clear_orphans(work_dir)
    return Path(tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-", dir=_base(work_dir)))


def clear_orphans(work_dir: Path | None) -> list[Path]:
    """Remove the task directories in `work_dir` (the temp directory if None) whose process
    is gone: directories (not links) of this user, named `PREFIX<pid>-…` by `task_dir`.
    Returns those removed."""
    base, removed = _base(work_dir), []
    for entry in base.glob(f"{PREFIX}*-*"):
        pid, sep, _ = entry.name[len(PREFIX):].partition("-")
        if not (sep and pid.isdigit()) or _alive(int(pid)):
            continue
        try:
            info = entry.lstat()
        except OSError:
            continue
        if stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid():
            shutil.rmtree(entry, ignore_errors=True)
            removed.append(entry)
    return removed


def _base(work_dir: Path | None) -> Path:
    return Path(work_dir) if work_dir is not None else Path(tempfile.gettempdir())


def _alive(pid: int) -> bool:
    if pid <= 0:
        return True  # not a process of ours: leave it
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # someone else's process
    return True
