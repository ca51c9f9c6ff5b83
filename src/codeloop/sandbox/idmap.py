"""Writable directories owned by root, seen by the sandbox uid as its own (when codeloop runs
as root and commands run as an unprivileged uid with no capabilities).

A command must edit workspace files that root owns without holding CAP_DAC_OVERRIDE, which
would also open every root-only file in its view. Instead bwrap starts inside a private mount
namespace where each writable directory is an idmapped bind of itself (root <-> sandbox uid).
"""

from __future__ import annotations

import fcntl
import os
import select
import struct
import subprocess
import sys
import weakref
from collections.abc import Sequence
from pathlib import Path

from codeloop.sandbox.environment import launcher_env
from codeloop.sandbox.errors import SandboxUnavailable

NSENTER = "/usr/bin/nsenter"
_HELPER = Path(__file__).with_name("idmap_helper.py")
_SETUP_TIMEOUT_S = 20.0


_FS_IOC_GETVERSION = 0x80087601


def _identity(path: Path) -> tuple[int, int, int]:
    """Device, inode and (where the filesystem has one) the inode's generation: an inode
    number is reused at once for a new directory, which the held mount would not show."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        try:
            generation = struct.unpack("l", fcntl.ioctl(fd, _FS_IOC_GETVERSION, bytes(8)))[0]
        except OSError:
            generation = 0
        return st.st_dev, st.st_ino, generation
    finally:
        os.close(fd)


class IdmappedDirs:
    """A held mount namespace where `dirs` appear owned by `uid`; bwrap enters it via nsenter."""

    def __init__(self, dirs: Sequence[Path], uid: int) -> None:
        self.dirs = tuple(Path(os.path.realpath(d)) for d in dirs)
        self._ids = [_identity(d) for d in self.dirs]
        self.fd = _hold_namespace(self.dirs, uid)
        self._closer = weakref.finalize(self, os.close, self.fd)

    def covers(self, dirs: Sequence[Path]) -> bool:
        """True while the namespace maps exactly `dirs`, each still the same directory."""
        wanted = tuple(Path(os.path.realpath(d)) for d in dirs)
        try:
            return wanted == self.dirs and [_identity(d) for d in wanted] == self._ids
        except OSError:
            return False

    def launcher(self) -> list[str]:
        """The argv prefix that runs the rest inside the namespace (pass `fd` to the child)."""
        return [NSENTER, f"--mount=/proc/self/fd/{self.fd}", "--"]

    def close(self) -> None:
        self._closer()


def _hold_namespace(dirs: Sequence[Path], uid: int) -> int:
    """Run the helper, take an fd on its mount namespace, then let it exit."""
    if not os.access(NSENTER, os.X_OK):
        raise SandboxUnavailable(f"{NSENTER} is missing (util-linux)",
                                 "install util-linux, or run codeloop as an ordinary user")
    argv = [sys.executable, "-I", "-S", str(_HELPER), str(uid), *map(str, dirs)]
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, env=launcher_env(), cwd="/")
    assert proc.stdin is not None and proc.stdout is not None
    try:
        ready = select.select([proc.stdout], [], [], _SETUP_TIMEOUT_S)[0]
        line = proc.stdout.readline().decode(errors="replace").strip() if ready else "timeout"
        if line != "ready":
            raise SandboxUnavailable(
                f"cannot map root-owned directories to the sandbox uid ({line or 'no answer'})",
                "this needs idmapped mounts (Linux 5.12+, 5.19+ under overlayfs) on the "
                "workspace's filesystem; `codeloop doctor` shows the probe",
            )
        return os.open(f"/proc/{proc.pid}/ns/mnt", os.O_RDONLY | os.O_CLOEXEC)
    finally:
        proc.stdin.close()
        proc.stdout.close()
        try:
            proc.wait(timeout=_SETUP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
