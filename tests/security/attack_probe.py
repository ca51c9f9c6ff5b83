"""Runs INSIDE the sandbox (system python3): tries escapes and prints what happened as JSON.

Each attempt prints {"name": ..., "ret": ..., "errno": ...}; a blocked attempt has ret -1.
"""

from __future__ import annotations

import ctypes
import json
import os
import platform
import socket
import sys

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long

# x86_64 syscall numbers (the suite checks the architecture before using them).
NR = {
    "ptrace": 101,
    "process_vm_readv": 310,
    "process_vm_writev": 311,
    "mount": 165,
    "umount2": 166,
    "pivot_root": 155,
    "unshare": 272,
    "setns": 308,
    "clone": 56,
    "clone3": 435,
    "keyctl": 250,
    "add_key": 248,
    "request_key": 249,
    "bpf": 321,
    "perf_event_open": 298,
    "userfaultfd": 323,
    "io_uring_setup": 425,
    "io_uring_enter": 426,
    "io_uring_register": 427,
    "fsopen": 430,
    "open_tree": 428,
    "init_module": 175,
    "kexec_load": 246,
    "ioctl": 16,
}
CLONE_NEWUSER = 0x10000000
CLONE_NEWNS = 0x00020000
CLONE_NEWNET = 0x40000000
SIGCHLD = 17
TIOCSTI = 0x5412
TIOCLINUX = 0x541C


def attempt(name: str, *args: int | bytes | None) -> dict[str, object]:
    ctypes.set_errno(0)
    call_args = [ctypes.c_long(a) if isinstance(a, int) else a for a in args]
    ret = libc.syscall(ctypes.c_long(NR[name]), *call_args)
    if ret == 0 and name in ("clone",):
        os._exit(0)  # the child of a clone that should not have happened
    return {"name": name, "ret": ret, "errno": ctypes.get_errno()}


def syscalls() -> list[dict[str, object]]:
    out = []
    byte = ctypes.create_string_buffer(b"x")
    ns_fd = os.open("/proc/self/ns/net", os.O_RDONLY)
    out.append(attempt("ptrace", 16, 1, 0, 0))  # PTRACE_ATTACH to the sandbox's pid 1
    out.append(attempt("process_vm_readv", 1, 0, 0, 0, 0, 0))
    out.append(attempt("process_vm_writev", 1, 0, 0, 0, 0, 0))
    out.append(attempt("mount", b"none", b"/tmp", b"tmpfs", 0, 0))
    out.append(attempt("umount2", b"/tmp", 0))
    out.append(attempt("unshare", CLONE_NEWUSER))
    out.append(attempt("unshare", CLONE_NEWNS))
    out.append(attempt("unshare", CLONE_NEWNET))
    out.append(attempt("setns", ns_fd, 0))
    out.append(attempt("clone", CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0))
    out.append(attempt("clone3", 0, 0))
    out.append(attempt("keyctl", 0, -3, 0))
    out.append(attempt("add_key", b"user", b"k", b"v", 1, -3))
    out.append(attempt("request_key", b"user", b"k", 0, 0))
    out.append(attempt("bpf", 5, 0, 0))
    out.append(attempt("perf_event_open", 0, 0, -1, -1, 0))
    out.append(attempt("userfaultfd", 0))
    out.append(attempt("io_uring_setup", 1, 0))
    out.append(attempt("io_uring_enter", 0, 0, 0, 0, 0))
    out.append(attempt("io_uring_register", 0, 0, 0, 0))
    out.append(attempt("fsopen", b"tmpfs", 0))
    out.append(attempt("open_tree", -100, b"/", 0))
    out.append(attempt("init_module", 0, 0, b""))
    out.append(attempt("kexec_load", 0, 0, 0, 0))
    for fd in (0, 1, 2):
        for request in (TIOCSTI, TIOCSTI | (1 << 32), TIOCLINUX):
            entry = attempt("ioctl", fd, request, ctypes.addressof(byte))
            entry["name"] = f"ioctl({fd},{request:#x})"
            out.append(entry)
    return out


def sockets() -> list[dict[str, object]]:
    out = []
    for label, family, kind in (
        ("AF_UNIX", socket.AF_UNIX, socket.SOCK_STREAM),
        ("AF_VSOCK", 40, socket.SOCK_STREAM),
        ("AF_PACKET", socket.AF_PACKET, socket.SOCK_RAW),
        ("raw ICMP", socket.AF_INET, socket.SOCK_RAW),
    ):
        try:
            socket.socket(family, kind, socket.IPPROTO_ICMP if label == "raw ICMP" else 0).close()
            out.append({"name": label, "ret": 0, "errno": 0})
        except OSError as exc:
            out.append({"name": label, "ret": -1, "errno": exc.errno})
    return out


def connect(target: str) -> dict[str, object]:
    """Try one connection; `target` is host:port, [v6]:port, unix:PATH or abstract:NAME."""
    try:
        if target.startswith("unix:"):
            s = socket.socket(socket.AF_UNIX)
            s.settimeout(2)
            s.connect(target[5:])
        elif target.startswith("abstract:"):
            s = socket.socket(socket.AF_UNIX)
            s.settimeout(2)
            s.connect("\0" + target[9:])
        elif target.startswith("udp:"):
            host, port = target[4:].rsplit(":", 1)
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.sendto(b"exfil", (host, int(port)))
        else:
            host, port = target.rsplit(":", 1)
            family = socket.AF_INET6 if host.startswith("[") else socket.AF_INET
            s = socket.socket(family)
            s.settimeout(2)
            s.connect((host.strip("[]"), int(port)))
            s.sendall(b"exfil")
        s.close()
        return {"name": target, "ret": 0, "errno": 0}
    except OSError as exc:
        return {"name": target, "ret": -1, "errno": exc.errno, "error": str(exc)}


def main() -> None:
    what = sys.argv[1]
    if what == "syscalls":
        if platform.machine() != "x86_64":
            print(json.dumps({"skip": f"syscall numbers are for x86_64, not {platform.machine()}"}))
            return
        result: object = syscalls()
    elif what == "sockets":
        result = sockets()
    elif what == "connect":
        result = [connect(t) for t in sys.argv[2:]]
    elif what == "fork":
        result = fork_count()
    else:
        raise SystemExit(f"unknown probe {what}")
    print(json.dumps(result))


def fork_count() -> dict[str, object]:
    """Fork sleeping children until the kernel refuses; report how many were made."""
    children = []
    error = ""
    for _ in range(5000):
        try:
            pid = os.fork()
        except OSError as exc:
            error = str(exc)
            break
        if pid == 0:
            import time

            time.sleep(30)
            os._exit(0)
        children.append(pid)
    return {"forked": len(children), "error": error, "uid": os.getuid()}


if __name__ == "__main__":
    main()
