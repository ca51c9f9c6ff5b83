"""How many tasks (processes and threads) a user runs now, for RLIMIT_NPROC.

RLIMIT_NPROC is not a per-command limit: the kernel compares it with every task of the
real uid the command runs as, on the whole machine, and bwrap's own clone is checked too. A
user whose shell, editor and codeloop's threads already pass `max_processes` could run no
sandboxed command at all; under root every command runs as the one sandbox uid, so two
sessions' test runs would share one limit. The sandbox therefore sets the limit to what that
uid runs now plus `max_processes`.

That outer limit is loose: tasks of the uid that end while the command runs leave it room
past `max_processes`. Since Linux 5.14 the kernel counts RLIMIT_NPROC per user namespace as
well (and checks every level), so where the command runs in a user namespace of its own the
limit set inside it is exact and the outer one only bounds the uid as a whole.
"""

from __future__ import annotations

import os

_PROC = "/proc"


def tasks_of(uid: int) -> int:
    """Tasks owned by `uid` now: each /proc/PID owned by it (its effective uid, equal to the
    real one but for set-uid programs) with the threads listed under it."""
    count = 0
    try:
        entries = os.listdir(_PROC)
    except OSError:
        return 0
    for name in entries:
        if not name.isdigit():
            continue
        try:
            if os.stat(f"{_PROC}/{name}").st_uid != uid:
                continue
            count += len(os.listdir(f"{_PROC}/{name}/task"))
        except OSError:  # the process ended while we looked
            continue
    return count


def counts_per_namespace(release: str | None = None) -> bool:
    """Whether this kernel counts RLIMIT_NPROC per user namespace (Linux 5.14 and later)."""
    parts = (release or os.uname().release).split(".")
    try:
        major, minor = int(parts[0]), int("".join(c for c in parts[1] if c.isdigit()) or 0)
    except (IndexError, ValueError):
        return False
    return (major, minor) >= (5, 14)


def nproc_limit(max_processes: int, runs_as: int) -> int:
    """The RLIMIT_NPROC that leaves a command running as uid `runs_as` `max_processes` tasks
    beyond what that uid runs already (root is not bound by it: the plain value)."""
    return max_processes if runs_as == 0 else tasks_of(runs_as) + max_processes
