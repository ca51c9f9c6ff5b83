"""Runs as a root child process: builds a private mount namespace whose given directories appear
owned by the sandbox uid (idmapped binds), prints "ready", and holds it until stdin closes.

Standalone (run with `python -I -S`): only the standard library, no codeloop imports. A
separate process because a threaded parent cannot enter a new mount namespace.
"""

from __future__ import annotations

import ctypes
import os
import struct
import sys

_SYS_OPEN_TREE = 428
_SYS_MOVE_MOUNT = 429
_SYS_MOUNT_SETATTR = 442
_OPEN_TREE_CLONE = 1
_OPEN_TREE_CLOEXEC = 0o2000000
_AT_FDCWD = -100
_AT_EMPTY_PATH = 0x1000
_MOVE_MOUNT_F_EMPTY_PATH = 0x4
_MOUNT_ATTR_IDMAP = 0x00100000
_CLONE_NEWNS = 0x00020000
_CLONE_NEWUSER = 0x10000000
_MS_REC = 0x4000
_MS_SLAVE = 0x80000
_MAX_ID = 4294967295

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long


def _check(ret: int, what: str) -> int:
    if ret < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")
    return ret


def _mapping(uid: int) -> str:
    """Swap 0 and `uid`, identity elsewhere: root's files look like the sandbox user's and the
    sandbox user's writes are stored as root's, so ownership on disk never changes."""
    return (f"0 {uid} 1\n1 1 {uid - 1}\n{uid} 0 1\n"
            f"{uid + 1} {uid + 1} {_MAX_ID - uid - 1}\n")


def _userns(uid: int) -> int:
    """A user namespace carrying the mapping, held by an fd (its process exits at once)."""
    ready_r, ready_w = os.pipe()
    go_r, go_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        ok = libc.unshare(_CLONE_NEWUSER) == 0
        os.write(ready_w, b"1" if ok else b"0")
        os.read(go_r, 1)
        os._exit(0)
    try:
        if os.read(ready_r, 1) != b"1":
            raise OSError("cannot create a user namespace for the id mapping")
        for name in ("uid_map", "gid_map"):
            with open(f"/proc/{pid}/{name}", "w") as fh:
                fh.write(_mapping(uid))
        return os.open(f"/proc/{pid}/ns/user", os.O_RDONLY | os.O_CLOEXEC)
    finally:
        os.write(go_w, b"x")
        os.waitpid(pid, 0)


def _idmap_onto_itself(path: str, userns_fd: int) -> None:
    fd = _check(libc.syscall(_SYS_OPEN_TREE, _AT_FDCWD, path.encode(),
                             _OPEN_TREE_CLONE | _OPEN_TREE_CLOEXEC), f"open_tree {path}")
    try:
        attr = ctypes.create_string_buffer(struct.pack("QQQQ", _MOUNT_ATTR_IDMAP, 0, 0, userns_fd))
        _check(libc.syscall(_SYS_MOUNT_SETATTR, fd, b"", _AT_EMPTY_PATH, attr, 32),
               f"idmap {path}")
        _check(libc.syscall(_SYS_MOVE_MOUNT, fd, b"", _AT_FDCWD, path.encode(),
                            _MOVE_MOUNT_F_EMPTY_PATH), f"attach {path}")
    finally:
        os.close(fd)


def main(argv: list[str]) -> int:
    uid, paths = int(argv[0]), argv[1:]
    try:
        userns = _userns(uid)
        _check(libc.unshare(_CLONE_NEWNS), "unshare a mount namespace")
        # Slave: host mounts still arrive, and nothing mounted here reaches the host.
        _check(libc.mount(None, b"/", None, _MS_REC | _MS_SLAVE, None), "make / a slave")
        for path in paths:
            _idmap_onto_itself(path, userns)
    except OSError as exc:
        print(f"error: {exc}", flush=True)
        return 1
    print("ready", flush=True)
    sys.stdin.read()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
