"""Per-command cgroups: one memory and process limit over a command's whole process tree.

Found once per process and degraded in order: cgroup v2 where a subtree is delegated to us,
cgroup v1's memory (and pids) controllers as root, else none (rlimits plus RSS polling, see
`tree_watch`). A command's cgroup is made before bwrap starts; bwrap's processes are moved
in while it holds the command back (`--block-fd`), so nothing the command runs starts
outside it; it is killed and removed when the command ends.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import subprocess
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from codeloop.sandbox.base import Limits
from codeloop.sandbox.environment import launcher_env
from codeloop.sandbox.errors import SandboxUnavailable

# bwrap's own processes in the cgroup (the launcher that becomes bwrap, and the sandbox's init).
BWRAP_PROCESSES = 2
_RMDIR_TRIES = 200


def memory_reason(limits: Limits) -> str:
    return f"memory limit ({limits.memory_mb} MB for the whole command) exceeded"


def process_reason(limits: Limits) -> str:
    return f"process limit ({limits.max_processes} for the whole command) exceeded"


@dataclass(frozen=True)
class CgroupPlan:
    """Where per-command cgroups are made: v2 (one directory) or v1 (memory, maybe pids)."""

    version: int
    memory_parent: Path
    pids_parent: Path | None

    @property
    def mechanism(self) -> str:
        return f"cgroup v{self.version}"

    def describe(self) -> str:
        if self.version == 2:
            return f"cgroup v2 under {self.memory_parent} (memory.max, pids.max, cgroup.kill)"
        pids = f", pids under {self.pids_parent}" if self.pids_parent else ", no pids controller"
        return f"cgroup v1 as root: memory under {self.memory_parent}{pids}"


def _unescape(field: str) -> str:
    return field.replace("\\040", " ").replace("\\011", "\t").replace("\\134", "\\")


def _cgroup_mounts() -> list[tuple[str, str, str, set[str]]]:
    """(mount root, mount point, fstype, super options) of every cgroup mount we can see."""
    found = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if len(fields) >= 5 and len(tail) >= 3 and tail[0] in ("cgroup", "cgroup2"):
            found.append((_unescape(fields[3]), _unescape(fields[4]), tail[0],
                          set(tail[2].split(","))))
    return found


def _own_paths() -> dict[str, str]:
    """Our cgroup per controller ("" is the v2 hierarchy)."""
    own: dict[str, str] = {}
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _hid, controllers, path = line.split(":", 2)
        for name in controllers.split(",") if controllers else [""]:
            own[name] = path
    return own


def _located(mount_root: str, mount_point: str, path: str) -> Path | None:
    root = mount_root.rstrip("/")
    if path != mount_root and not path.startswith(root + "/"):
        return None
    return Path(mount_point) / path[len(root):].lstrip("/")


def _candidates(root: bool) -> list[CgroupPlan]:
    mounts, own = _cgroup_mounts(), _own_paths()
    plans = []
    for mroot, point, fstype, _opts in mounts:
        if fstype == "cgroup2" and "" in own:
            mine = _located(mroot, point, own[""])
            if mine is not None:
                # Our own cgroup, or its parent when we sit in a delegated leaf.
                near = [mine, mine.parent] if mine != Path(point) else [mine]
                plans += [CgroupPlan(2, d, d) for d in near if _v2_ready(d)]
    if root:
        def v1(controller: str) -> Path | None:
            for mroot, point, fstype, opts in mounts:
                if fstype == "cgroup" and controller in opts and controller in own:
                    return _located(mroot, point, own[controller])
            return None

        memory = v1("memory")
        if memory is not None and (memory / "memory.limit_in_bytes").exists():
            plans.append(CgroupPlan(1, memory, v1("pids")))
    return plans


def _v2_ready(directory: Path) -> bool:
    try:
        enabled = (directory / "cgroup.subtree_control").read_text().split()
    except OSError:
        return False
    return {"memory", "pids"} <= set(enabled) and os.access(directory, os.W_OK)


def find_plan(root: bool) -> tuple[CgroupPlan | None, str]:
    """The first plan whose trial works (a real cgroup made, joined and removed), and why."""
    tried = []
    try:
        candidates = _candidates(root)
    except OSError as exc:
        return None, f"cannot read cgroup mounts ({exc})"
    for plan in candidates:
        problem = _trial(plan)
        if problem is None:
            sweep_stale(plan)
            return plan, plan.describe()
        tried.append(f"v{plan.version} at {plan.memory_parent}: {problem}")
    if tried:
        return None, "; ".join(tried)
    if root:
        return None, "no delegated cgroup v2 subtree and no cgroup v1 memory controller"
    return None, "no delegated cgroup v2 subtree (cgroup v1 needs root)"


def _trial(plan: CgroupPlan) -> str | None:
    """Make a cgroup, move a real process in, see it there, remove it all."""
    try:
        with CommandCgroup(plan, Limits(memory_mb=64, max_processes=8)) as group:
            proc = subprocess.Popen(["/bin/sleep", "10"], env=launcher_env())
            try:
                group.adopt([proc.pid])
                joined = Path(f"/proc/{proc.pid}/cgroup").read_text()
            finally:
                proc.kill()
                proc.wait()
            if group.memory.name not in joined:
                return "a process moved in did not show the cgroup"
    except (OSError, SandboxUnavailable) as exc:
        return str(exc)[:200]
    return None


def _write(path: Path, value: str) -> None:
    with open(path, "w") as fh:
        fh.write(value)


def _count(path: Path, key: str) -> int:
    """The value of `key N` in a flat-keyed cgroup file (memory.events, memory.oom_control)."""
    with contextlib.suppress(OSError):
        for line in path.read_text().splitlines():
            name, _, value = line.partition(" ")
            if name == key:
                return int(value)
    return 0


class CommandCgroup:
    """One command's cgroup(s) with its limits; `adopt` moves the command's processes in."""

    def __init__(self, plan: CgroupPlan, limits: Limits) -> None:
        self.plan = plan
        self.limits = limits
        name = f"codeloop-{os.getpid()}-{secrets.token_hex(4)}"
        self.dirs: list[Path] = []
        memory = str(limits.memory_mb << 20)
        pids = str(limits.max_processes + BWRAP_PROCESSES)
        try:
            self.memory = self._make(plan.memory_parent / name)
            if plan.version == 2:
                _write(self.memory / "memory.max", memory)
                _write(self.memory / "pids.max", pids)
                # One out-of-memory kill takes the whole command, not its largest process.
                _write(self.memory / "memory.oom.group", "1")
                with contextlib.suppress(OSError):
                    _write(self.memory / "memory.swap.max", "0")
            else:
                _write(self.memory / "memory.limit_in_bytes", memory)
                with contextlib.suppress(OSError):  # absent without swap accounting
                    _write(self.memory / "memory.memsw.limit_in_bytes", memory)
                # v1 has no oom.group: rather than kill one process and let the rest go
                # on, the kernel parks the tree at the limit and `exceeded` kills it whole.
                _write(self.memory / "memory.oom_control", "1")
                if plan.pids_parent is not None:
                    _write(self._make(plan.pids_parent / name) / "pids.max", pids)
        except OSError as exc:
            self.close()
            raise SandboxUnavailable(f"cannot set up the command's cgroup: {exc}",
                                     "see `codeloop doctor` (cgroups)") from exc

    def _make(self, path: Path) -> Path:
        path.mkdir()
        self.dirs.append(path)
        return path

    def __enter__(self) -> CommandCgroup:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def adopt(self, pids: Iterable[int]) -> None:
        """Move processes (bwrap's, before the command starts) into the cgroups."""
        for pid in pids:
            for directory in self.dirs:
                _write(directory / "cgroup.procs", str(pid))

    @property
    def has_pids(self) -> bool:
        return self.plan.version == 2 or self.plan.pids_parent is not None

    def exceeded(self, _pid: int = 0) -> str | None:
        """The limit the command hit, if the kernel had to kill for memory."""
        if self.plan.version == 2:
            events = self.memory / "memory.events"
            hit = _count(events, "oom_kill") or _count(events, "oom_group_kill")
        else:
            control = self.memory / "memory.oom_control"
            hit = _count(control, "under_oom") or _count(control, "oom_kill")
        return memory_reason(self.limits) if hit else None

    def kill(self) -> None:
        if self.plan.version == 2:
            with contextlib.suppress(OSError):
                _write(self.memory / "cgroup.kill", "1")
                return
        for directory in self.dirs:
            with contextlib.suppress(OSError):
                for pid in (directory / "cgroup.procs").read_text().split():
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.kill(int(pid), signal.SIGKILL)

    def close(self) -> None:
        """Kill what is left and remove the cgroups (they empty as the killed processes exit;
        one still busy after a while is left to a background sweep)."""
        for directory in reversed(self.dirs):
            for _ in range(_RMDIR_TRIES):
                if _removed(directory):
                    break
                self.kill()
                time.sleep(0.005)
            else:
                _sweep_later(directory)
        self.dirs = []


def _removed(directory: Path) -> bool:
    try:
        directory.rmdir()
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return True


_late: list[Path] = []
_late_lock = threading.Lock()
_LATE_TRIES = 600  # x 0.2 s: a killed tree freeing gigabytes on a loaded machine


def _sweep_later(directory: Path) -> None:
    with _late_lock:
        _late.append(directory)
        if len(_late) == 1:
            threading.Thread(target=_sweep, name="codeloop-cgroup-sweep", daemon=True).start()


def _sweep() -> None:
    for _ in range(_LATE_TRIES):
        time.sleep(0.2)
        with _late_lock:
            _late[:] = [d for d in _late if not _removed(d)]
            if not _late:
                return
    with _late_lock:
        _late.clear()  # `sweep_stale` of a later process takes what is left


def sweep_stale(plan: CgroupPlan) -> None:
    """Remove empty per-command cgroups that a process which no longer runs left behind."""
    for parent in (plan.memory_parent, plan.pids_parent):
        if parent is None:
            continue
        with contextlib.suppress(OSError):
            for directory in parent.glob("codeloop-*-*"):
                pid = directory.name.split("-")[1]
                if pid.isdigit() and not Path(f"/proc/{pid}").exists():
                    _removed(directory)
