"""The scratch directories of eval tasks, and what killed tasks left of theirs.

A task's checkout, session state, environment build and judge run live in directories
removed when the task ends; a process killed mid-task (a Ray worker lost, `kill -9`) cannot
remove them, and those piled up in the temp directory of every machine that ran tasks. A
directory is named for its kind, the process that made it and that process's machine
(`codeloop-<kind>-<pid>-<machine>-…`), so the next task (or the run's end) on the same
machine removes those whose process is gone; a work directory shared between machines (or
containers) keeps the others' for them.
"""

from __future__ import annotations

import hashlib
import os
import socket
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Literal

from codeloop.sandbox.upper import remove_tree

# `suite`: an `eval run` task; `swe`: an `eval swebench` instance's checkout and session;
# `judge`: a judge's fresh checkout; `envbuild`: the checkout an environment is built from.
Kind = Literal["suite", "swe", "judge", "envbuild"]
KINDS: tuple[Kind, ...] = ("suite", "swe", "judge", "envbuild")


def prefix(kind: Kind) -> str:
    return f"codeloop-{kind}-"


def task_dir(work_dir: Path | None, kind: Kind) -> Path:
    """A new scratch directory of `kind` in `work_dir` (the temp directory if None), after
    clearing the ones dead processes left there."""
    clear_orphans(work_dir)
    return Path(tempfile.mkdtemp(prefix=f"{prefix(kind)}{os.getpid()}-{machine()}-",
                                 dir=_base(work_dir)))


@contextmanager
def scratch_dir(work_dir: Path | None, kind: Kind) -> Iterator[Path]:
    """`task_dir`, removed when the block ends (a sandbox's mode-000 overlay dirs too)."""
    path = task_dir(work_dir, kind)
    try:
        yield path
    finally:
        remove_tree(path)


def clear_orphans(work_dir: Path | None) -> list[Path]:
    """Remove the scratch directories in `work_dir` (the temp directory if None) whose
    process is gone: directories (not links) of this user, named by `task_dir`. Returns
    those removed."""
    base, removed, here = _base(work_dir), [], machine()
    for kind in KINDS:
        for entry in base.glob(f"{prefix(kind)}*-*"):
            pid, _, rest = entry.name[len(prefix(kind)):].partition("-")
            made_on, sep, _ = rest.partition("-")
            if not (sep and pid.isdigit()) or made_on != here or _alive(int(pid)):
                continue
            try:
                info = entry.lstat()
            except OSError:
                continue
            if stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid():
                remove_tree(entry)
                removed.append(entry)
    return removed


def machine() -> str:
    """This machine and process namespace, in 8 characters: a pid means nothing elsewhere."""
    try:
        namespace = os.readlink("/proc/self/ns/pid")
    except OSError:
        namespace = ""
    seen = f"{socket.gethostname()}:{namespace}".encode()
    return hashlib.blake2b(seen, digest_size=4).hexdigest()


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
