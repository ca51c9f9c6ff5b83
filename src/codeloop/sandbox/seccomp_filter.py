"""The seccomp deny-list every sandboxed command runs under, compiled once to BPF.

A deny-list (default allow) because build tools and test suites use a long tail of
ordinary syscalls; what is denied is what lets a process leave or attack its sandbox.
"""

from __future__ import annotations

import errno
import functools
import os
import socket

import pyseccomp as sc

# Each of these reaches the kernel's most exposed or most powerful interfaces.
DENIED_SYSCALLS = (
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "pidfd_getfd",
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "open_tree",
    "move_mount",
    "mount_setattr",
    "setns",
    "unshare",
    "keyctl",
    "add_key",
    "request_key",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "open_by_handle_at",
    "name_to_handle_at",
    "reboot",
    "swapon",
    "swapoff",
    "acct",
    "syslog",
    "quotactl",
    "vhangup",
)

_TIOCSTI = 0x5412
_TIOCLINUX = 0x541C
_CLONE_NAMESPACE_FLAGS = (
    0x00020000,  # CLONE_NEWNS
    0x02000000,  # CLONE_NEWCGROUP
    0x04000000,  # CLONE_NEWUTS
    0x08000000,  # CLONE_NEWIPC
    0x10000000,  # CLONE_NEWUSER
    0x20000000,  # CLONE_NEWPID
    0x40000000,  # CLONE_NEWNET
)
_AF_VSOCK = 40  # reaches the hypervisor host; a network namespace does not cover it
_DENIED_FAMILIES = (socket.AF_PACKET, _AF_VSOCK)


def _build(allow_unix_sockets: bool) -> bytes:
    filt = sc.SyscallFilter(sc.ALLOW)
    eperm = sc.ERRNO(errno.EPERM)
    for name in DENIED_SYSCALLS:
        filt.add_rule(eperm, name)
    # ioctl's request is an int in the kernel: compare the low 32 bits only, else a caller
    # could set high bits to slip past an exact 64-bit match.
    for request in (_TIOCSTI, _TIOCLINUX):
        filt.add_rule(eperm, "ioctl", sc.Arg(1, sc.MASKED_EQ, 0xFFFFFFFF, request))
    for flag in _CLONE_NAMESPACE_FLAGS:
        filt.add_rule(eperm, "clone", sc.Arg(0, sc.MASKED_EQ, flag, flag))
    # clone3 passes its flags in memory that seccomp cannot read; ENOSYS makes libc fall
    # back to clone, whose flags are checked above.
    filt.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")
    families = list(_DENIED_FAMILIES)
    if not allow_unix_sockets:
        # Path sockets stay connectable through read-only binds (pitfall 3); socketpair
        # (anonymous pairs, used by many runtimes) stays allowed.
        families.append(socket.AF_UNIX)
    for family in families:
        filt.add_rule(sc.ERRNO(errno.EAFNOSUPPORT), "socket", sc.Arg(0, sc.EQ, family))
    fd = os.memfd_create("codeloop-seccomp", os.MFD_CLOEXEC)
    try:
        with os.fdopen(os.dup(fd), "wb") as fh:
            filt.export_bpf(fh)
        os.lseek(fd, 0, os.SEEK_SET)
        return _read_all(fd)
    finally:
        os.close(fd)


def _read_all(fd: int) -> bytes:
    parts = []
    while chunk := os.read(fd, 65536):
        parts.append(chunk)
    return b"".join(parts)


@functools.lru_cache(maxsize=2)
def seccomp_program(allow_unix_sockets: bool = False) -> bytes:
    """The compiled BPF program (cached per process)."""
    return _build(allow_unix_sockets)


def program_fd(program: bytes) -> int:
    """A fresh, rewound file descriptor holding `program`, for bwrap's `--seccomp FD`."""
    fd = os.memfd_create("codeloop-seccomp-run", os.MFD_CLOEXEC)
    os.write(fd, program)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd
