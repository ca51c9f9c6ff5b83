"""The default backend: every command in its own bubblewrap sandbox over the workspace.

The workspace directory may hold hard links to the user's files, so a command never writes
into it: it sees an overlay whose fresh upper layer is merged back (`workspace.absorb`)
after the command ends.
"""

from __future__ import annotations

import os
import resource
import tempfile
import threading
import weakref
from collections.abc import Callable, Mapping, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from codeloop.sandbox.base import CommandResult, Limits
from codeloop.sandbox.bwrap_info import SandboxTracker
from codeloop.sandbox.bwrap_profile import (
    PRLIMIT,
    SYSTEM_PYTHON,
    Profile,
    WorkspaceMount,
    bwrap_argv,
    namespace_nproc_works,
)
from codeloop.sandbox.cgroups import BWRAP_PROCESSES, CommandCgroup
from codeloop.sandbox.egress import EgressProxy
from codeloop.sandbox.environment import command_env, launcher_env
from codeloop.sandbox.errors import SandboxMisuse, SandboxUnavailable
from codeloop.sandbox.etc_view import data_fd, identity_files
from codeloop.sandbox.idmap import IdmappedDirs
from codeloop.sandbox.probe import DEFAULT_SANDBOX_UID, Capabilities, probe
from codeloop.sandbox.process import Guard, run_process
from codeloop.sandbox.seccomp_filter import program_fd, seccomp_program
from codeloop.sandbox.tree_watch import TreeWatch, tree
from codeloop.sandbox.upper import remove_tree, sanitize_upper
from codeloop.sandbox.user_tasks import nproc_limit

_RUNS_DIR = "sandbox-runs"


# Hard CPU limit past the soft one: the soft limit sends SIGXCPU, which names the cause in
# the exit status (152); at the hard limit the kernel's SIGKILL would look like any kill.
_CPU_GRACE_S = 5


def _rlimit_values(limits: Limits, runs_as: int) -> list[tuple[int, str, int, int]]:
    """(resource, prlimit name, soft, hard) for each limit of a command run as uid `runs_as`."""
    mb = 1 << 20
    cpu = limits.cpu_seconds
    # Counted against every task of the uid, so the ones it runs already come on top
    # (user_tasks.py); the limit set inside a user namespace (`_namespace_nproc`) or else the
    # tree watch bounds the command's own tree to max_processes.
    nproc = nproc_limit(limits.max_processes, runs_as)
    return [
        (resource.RLIMIT_AS, "as", limits.memory_mb * mb, limits.memory_mb * mb),
        (resource.RLIMIT_FSIZE, "fsize", limits.max_file_mb * mb, limits.max_file_mb * mb),
        (resource.RLIMIT_NPROC, "nproc", nproc, nproc),
        (resource.RLIMIT_NOFILE, "nofile", limits.max_open_files, limits.max_open_files),
        (resource.RLIMIT_CPU, "cpu", cpu, cpu + _CPU_GRACE_S),
        (resource.RLIMIT_CORE, "core", 0, 0),
    ]


def _rlimits(limits: Limits, runs_as: int) -> tuple[list[str], Callable[[], None] | None]:
    """How the command gets its resource limits (inherited through bwrap).

    util-linux's prlimit as a launcher keeps Popen on its fast path and off `preexec_fn`,
    which is unsafe in a threaded process; the pre-exec hook is the fallback.
    """
    values = _rlimit_values(limits, runs_as)
    if os.access(PRLIMIT, os.X_OK):
        return [PRLIMIT, *(f"--{name}={soft}:{hard}" for _, name, soft, hard in values), "--"], None

    def apply() -> None:
        for which, _, soft, hard in values:
            resource.setrlimit(which, (soft, hard))

    return [], apply


def _pipe(stack: ExitStack) -> tuple[int, int]:
    """A pipe (read end for the child, write end kept), closed when `stack` closes."""
    read, write = os.pipe2(os.O_CLOEXEC)
    stack.callback(os.close, read)
    stack.callback(os.close, write)
    return read, write


class BwrapSandbox:
    """Run each command under bwrap: no network, a minimal read-only system, the workspace."""

    name = "bwrap"

    def __init__(
        self,
        workspace: Any = None,
        *,
        tmp_size_mb: int = 256,
        shm_size_mb: int = 64,
        sandbox_uid: int = DEFAULT_SANDBOX_UID,
        extra_ro_binds: Sequence[Path] = (),
        extra_rw_binds: Sequence[Path] = (),
        extra_overlays: Mapping[Path, Path] | None = None,
        extra_links: Mapping[Path, Path] | None = None,
        capabilities: Capabilities | None = None,
        egress: EgressProxy | None = None,
        etc_root: Path = Path("/etc"),
    ) -> None:
        self.caps = capabilities or probe()
        if not self.caps.isolation_available or self.caps.bwrap_path is None:
            raise SandboxUnavailable(
                "bwrap cannot isolate commands on this machine",
                "run `codeloop doctor` to see which probe failed, or pass --no-sandbox",
            )
        self._bwrap = self.caps.bwrap_path
        self.workspace = workspace
        self.tmp_size_mb = tmp_size_mb
        self.shm_size_mb = shm_size_mb
        self._drop = (sandbox_uid, sandbox_uid) if self.caps.running_as_root else None
        # As root the command's uid owns nothing: the directories it writes are idmapped.
        self._map_ids = self._drop is not None and self.caps.workspace_idmap.ok
        self._idmap: IdmappedDirs | None = None
        self._private_runs: Path | None = None
        self._lock = threading.RLock()
        self._etc_root = Path(etc_root)
        self._extra = tuple(Path(p) for p in extra_ro_binds)
        self._extra_rw = tuple(Path(p) for p in extra_rw_binds)
        self._overlays = self._overlay_layers(extra_overlays or {})
        self._links = tuple((Path(p), Path(t)) for p, t in (extra_links or {}).items())
        # With an egress proxy, unix sockets are allowed so the forwarder can reach it;
        # the sandbox's view holds no other path socket and abstract ones are per-netns.
        if egress is not None and not os.access(SYSTEM_PYTHON, os.X_OK):
            raise SandboxUnavailable(
                f"the egress forwarder needs {SYSTEM_PYTHON} inside the sandbox",
                "install the system python3 package, or run without egress",
            )
        self.egress = egress

    def _overlay_layers(self, overlays: Mapping[Path, Path]) -> tuple[tuple[Path, Path, Path], ...]:
        """(directory, upper, work) per overlaid directory; its layer directory keeps the writes
        across commands until the caller removes it."""
        if overlays and not self.caps.overlay.ok:
            raise SandboxUnavailable(
                "overlay mounts are unavailable: a directory cannot be made writable without "
                "changing it", "run `codeloop doctor` to see why the overlay probe failed",
            )
        layers = []
        for directory, layer in overlays.items():
            upper, work = Path(layer) / "upper", Path(layer) / "work"
            upper.mkdir(parents=True, exist_ok=True)
            work.mkdir(exist_ok=True)
            layers.append((Path(directory), upper, work))
        return tuple(layers)

    def _scratch(self, stack: ExitStack, runs: Path | None) -> tuple[Path, Path]:
        """Fresh upper/work dirs for one command, removed when `stack` closes."""
        if runs is not None:
            runs.mkdir(exist_ok=True)
        run_dir = Path(tempfile.mkdtemp(prefix="codeloop-run-", dir=runs))
        stack.callback(remove_tree, run_dir)
        upper, work = run_dir / "upper", run_dir / "work"
        upper.mkdir()
        work.mkdir()
        return upper, work

    def _runs_dir(self) -> Path | None:
        if self.workspace is not None:
            return Path(os.path.realpath(self.workspace.path)).parent / _RUNS_DIR
        if not self._map_ids:
            return None
        # Without a workspace the upper layers still need an idmapped home: a private one.
        with self._lock:
            if self._private_runs is None:
                self._private_runs = Path(tempfile.mkdtemp(prefix="codeloop-runs-"))
                weakref.finalize(self, remove_tree, self._private_runs)
            return self._private_runs

    def _mount(self, cwd: Path, stack: ExitStack) -> tuple[WorkspaceMount, list[str]]:
        if self.workspace is None:
            # No workspace: the directory is visible, and writes are thrown away.
            source = cwd
            runs = self._runs_dir()
        else:
            source = Path(os.path.realpath(self.workspace.path))
            # Beside the merged view, on its filesystem, so absorbing is a rename.
            runs = source.parent / _RUNS_DIR
            if cwd != source and source not in cwd.parents:
                raise SandboxMisuse(
                    f"cwd {cwd} is outside the workspace {source}",
                    "run commands from the workspace directory or below it",
                )
        if self.caps.overlay.ok:
            upper, work = self._scratch(stack, runs)
            if self._drop is not None and not (self._map_ids and runs is not None):
                # The view's top directory takes its owner from the upper layer; without an
                # idmapped workspace it must be the command's, or tools that ask before
                # writing (hypothesis's example database in the cwd) see it read-only.
                os.chown(upper, *self._drop)
            return WorkspaceMount(source, source, upper, work), []
        if self.workspace is not None and getattr(self.workspace, "kind", "") == "copy":
            note = "overlay unavailable: the private copy is bind-mounted writable"
            return WorkspaceMount(source, source, bind_writable=True), [note]
        if self.workspace is None:
            note = "overlay unavailable: the directory is mounted read-only"
            return WorkspaceMount(source, source), [note]
        raise SandboxUnavailable(
            "overlay mounts are unavailable and the workspace is not a private copy",
            "use a copy workspace, or a machine where `codeloop doctor` shows overlay ok",
        )

    def run(
        self,
        command: str,
        cwd: Path,
        env: dict[str, str] | None = None,
        limits: Limits | None = None,
    ) -> CommandResult:
        lim = limits or Limits()
        cwd = Path(os.path.realpath(cwd))
        # tmpfs is RAM: never more of it than the command's memory limit.
        tmp_mb, shm_mb = min(self.tmp_size_mb, lim.memory_mb), min(self.shm_size_mb, lim.memory_mb)
        with ExitStack() as stack:
            mount, notes = self._mount(cwd, stack)
            fd = program_fd(seccomp_program(allow_unix_sockets=self.egress is not None))
            stack.callback(os.close, fd)
            etc = self._etc_files(stack)
            tracker = stack.enter_context(SandboxTracker())
            guard, group = self._tree_limits(
                lim, {"/tmp": tmp_mb << 20, "/dev/shm": shm_mb << 20}, stack, notes)
            # bwrap holds on `gate`; the command itself waits for "go" on `go`.
            gate, go = (_pipe(stack), _pipe(stack)) if group is not None else (None, None)
            profile = Profile(
                mount=mount,
                cwd=cwd,
                env=command_env(env, home="/tmp"),
                seccomp_fd=fd,
                info_fd=tracker.write_fd,
                tmp_size_mb=tmp_mb,
                shm_size_mb=shm_mb,
                drop_to=self._drop,
                extra_ro_binds=self._extra,
                extra_rw_binds=self._extra_rw,
                extra_overlays=self._overlays,
                egress_socket=self.egress.socket_path if self.egress else None,
                git_config=self._git_config(mount, self._runs_dir()),
                etc_root=self._etc_root,
                etc_files=etc,
                block_fd=gate[0] if gate else None,
                go_fd=go[0] if go else None,
                links=self._links,
                namespace_nproc=self._namespace_nproc(lim),
            )
            fds = [fd, tracker.write_fd, *(f for f, _ in etc),
                   *(gate[:1] if gate else []), *(go[:1] if go else [])]
            launcher: list[str] = []
            idmap = self._idmapped(mount)
            if idmap is not None:
                launcher += idmap.launcher()
                fds.append(idmap.fd)

            def started(pid: int) -> None:
                tracker.started()
                if group is not None and gate is not None and go is not None:
                    # bwrap waits on the gate: its processes join the cgroup before the
                    # command exists (moving them here overlaps bwrap's own set-up).
                    group.adopt(tree(pid))
                    os.write(gate[1], b"go")
                    os.write(go[1], b"go\n")

            rlimits, preexec = _rlimits(lim, self._drop[0] if self._drop else os.getuid())
            outcome = run_process(
                [*launcher, *rlimits, *bwrap_argv(self._bwrap, profile, command)],
                cwd=Path("/"),
                env=launcher_env(),
                timeout_s=lim.timeout_s,
                max_output_bytes=lim.max_output_bytes,
                pass_fds=tuple(fds),
                preexec_fn=preexec,
                started=started,
                finished=tracker.finished,
                guard=guard,
            )
            if outcome.limit is None and group is not None:
                # The kernel may have killed one process for memory and the command ended.
                outcome.limit = group.exceeded()
            notes += self._merge(mount.upper)
        return outcome.result(self.name, notes)

    def _namespace_nproc(self, lim: Limits) -> int | None:
        """The exact process limit set inside the command's own user namespace, where there
        is one (not under root, which drops to a shared uid instead) and the kernel counts it."""
        if self._drop is not None or not namespace_nproc_works():
            return None
        # Of bwrap's own processes only the sandbox's init is in the namespace: the command
        # keeps max_processes tasks, as under the pids cgroup.
        return lim.max_processes + BWRAP_PROCESSES - 1

    def _etc_files(self, stack: ExitStack) -> list[tuple[int, str]]:
        uid, gid = self._drop or (os.getuid(), os.getgid())
        files = []
        for name, data in identity_files(uid, gid).items():
            fd = data_fd(data, name)
            stack.callback(os.close, fd)
            files.append((fd, name))
        return files

    def _tree_limits(self, lim: Limits, tmpfs: dict[str, int], stack: ExitStack,
                     notes: list[str]) -> tuple[Guard, CommandCgroup | None]:
        """Memory and processes for the whole command: a cgroup where one works, else polling
        (`tmpfs`: the sandbox's tmpfs mounts and sizes, RAM that the poll counts too)."""
        plan = self.caps.cgroup_plan
        if plan is None:
            return TreeWatch(lim, tmpfs=tmpfs), None
        try:
            group = stack.enter_context(CommandCgroup(plan, lim))
        except SandboxUnavailable as exc:
            notes.append(f"{exc.message}; the command's memory is limited by polling instead")
            return TreeWatch(lim, tmpfs=tmpfs), None
        if group.has_pids:
            return group.exceeded, group
        count = TreeWatch(lim, memory=False)
        return (lambda pid: group.exceeded() or count(pid)), group

    def _idmapped(self, mount: WorkspaceMount) -> IdmappedDirs | None:
        """The namespace where the directories commands write look owned by their uid."""
        if not self._map_ids or self._drop is None:
            return None
        with self._lock:
            return self._idmapped_locked(mount, self._drop[0])

    def _idmapped_locked(self, mount: WorkspaceMount, uid: int) -> IdmappedDirs | None:
        dirs = [lower for lower, _, _ in self._overlays]
        dirs += [upper.parent for _, upper, _ in self._overlays]
        dirs += self._extra_rw
        runs = self._runs_dir()
        if runs is not None:
            runs.mkdir(exist_ok=True)
            dirs = [mount.source, runs, *dirs]
        # A directory inside another one is mapped with it (an idmapped mount cannot be
        # idmapped again).
        dirs = list(dict.fromkeys(Path(os.path.realpath(d)) for d in dirs))
        dirs = [d for d in dirs if not any(o in d.parents for o in dirs)]
        if not dirs:
            return None
        if self._idmap is None or not self._idmap.covers(dirs):
            # A command still running keeps the old one alive; it closes when unused.
            self._idmap = IdmappedDirs(dirs, uid)
        return self._idmap

    def _git_config(self, mount: WorkspaceMount, runs: Path | None) -> Path | None:
        """A global git config that trusts the workspace's repository, which the dropped uid
        does not own (git refuses such a repository; tools that clean GIT_* variables from
        the environment still read $HOME/.gitconfig)."""
        if self._drop is None or runs is None or self.workspace is None:
            return None
        runs.mkdir(exist_ok=True)
        path = runs / "gitconfig"
        if not path.is_file():
            path.write_text(f"[safe]\n\tdirectory = {mount.dest}\n")
        return path

    def _merge(self, upper: Path | None) -> list[str]:
        """Fold the command's upper layer into the workspace (sanitized first)."""
        if upper is None or self.workspace is None:
            return []
        absorb = getattr(self.workspace, "absorb", None)
        if absorb is None:
            return (
                ["the workspace cannot absorb command writes; they were dropped"]
                if any(upper.iterdir())
                else []
            )
        notes = sanitize_upper(upper)
        absorb(upper)
        dropped = getattr(self.workspace, "last_dropped", None)
        if dropped:
            notes.append("the workspace refused: " + ", ".join(map(str, dropped)))
        return notes
