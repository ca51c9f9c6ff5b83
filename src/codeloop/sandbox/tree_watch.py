"""Whole-command limits by polling, where no cgroup can enforce them.

RLIMIT_AS bounds each process, not the command: six children of 200 MB each pass a 300 MB
limit. This sums the memory of every process under bwrap's pid — the sandbox's pid namespace
holds only its descendants, whatever they do with setsid or double forks — plus what the
command keeps in its tmpfs mounts, and names the limit when the sum passes it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Mapping

from codeloop.sandbox.base import Limits
from codeloop.sandbox.cgroups import BWRAP_PROCESSES, memory_reason, process_reason

INTERVAL_S = 0.05
# Polling never takes more than about this share of the time the command runs.
_MAX_SHARE = 0.1
_KB = 1024


def children(pid: int) -> list[int]:
    """The children of every thread of `pid`, oldest first."""
    found: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as fh:
                found.extend(int(child) for child in fh.read().split())
        except OSError:
            continue
    return found


def tree(root: int) -> list[int]:
    """`root` and every descendant alive now (a process born mid-walk shows up next time)."""
    seen = {root}
    order = [root]
    for pid in order:  # grows while walking: breadth first
        for child in children(pid):
            if child not in seen:
                seen.add(child)
                order.append(child)
    return order


def _fields(path: str, names: Iterable[str]) -> int | None:
    """The sum of `name: N kB` lines in a /proc file, in bytes; None if unreadable."""
    wanted = set(names)
    total = 0
    try:
        with open(path) as fh:
            for line in fh:
                name, _, rest = line.partition(":")
                if name in wanted:
                    total += int(rest.split()[0]) * _KB
    except (OSError, ValueError, IndexError):
        return None
    return total


def resident(pid: int) -> int:
    """Anonymous and shared-memory pages resident for `pid` (file pages are reclaimable)."""
    return _fields(f"/proc/{pid}/status", ("RssAnon", "RssShmem")) or 0


def proportional(pid: int) -> int:
    """Like `resident`, with pages shared after fork split between the sharers."""
    exact = _fields(f"/proc/{pid}/smaps_rollup", ("Pss_Anon", "Pss_Shmem"))
    return resident(pid) if exact is None else exact


def tmpfs_used(init: int, mounts: Mapping[str, int]) -> int:
    """Bytes the sandbox keeps in its tmpfs mounts ({mount point: size}), seen through its
    init's root; a mount of another size is not ours yet (bwrap is still setting up)."""
    used = 0
    for mount, size in mounts.items():
        try:
            st = os.statvfs(f"/proc/{init}/root{mount}")
        except OSError:
            continue
        if st.f_blocks * st.f_frsize == size:
            used += (st.f_blocks - st.f_bfree) * st.f_frsize
    return used


class TreeWatch:
    """Called with bwrap's pid while the command runs; returns the limit it broke, if any."""

    def __init__(self, limits: Limits, *, memory: bool = True,
                 tmpfs: Mapping[str, int] | None = None) -> None:
        self.limits = limits
        self.memory = memory
        self.tmpfs = dict(tmpfs or {})
        self._next = 0.0

    def __call__(self, root: int) -> str | None:
        now = time.monotonic()
        if now < self._next:
            return None
        reason = self.check(root)
        spent = time.monotonic() - now
        self._next = now + max(INTERVAL_S, spent / _MAX_SHARE)
        return reason

    def check(self, root: int) -> str | None:
        pids = tree(root)
        if len(pids) > self.limits.max_processes + BWRAP_PROCESSES:
            return process_reason(self.limits)
        if not self.memory:
            return None
        limit = self.limits.memory_mb << 20
        # bwrap's first child is the sandbox's init; its root shows the sandbox's mounts.
        first = children(root)
        held = tmpfs_used(first[0], self.tmpfs) if first else 0
        if held + sum(resident(p) for p in pids) <= limit:
            return None
        # Pages shared copy-on-write after a fork count once per sharer above; confirm.
        if held + sum(proportional(p) for p in pids) <= limit:
            return None
        return memory_reason(self.limits)
