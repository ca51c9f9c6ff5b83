"""What a command sees of /etc: an allow-list of host entries, and generated passwd/group.

An allow-list, so a secret that appears on the host later (shadow, gshadow, sudoers,
ssl/private, ssh host keys, a pip or npm config holding an index token) is never in view.
"""

from __future__ import annotations

import contextlib
import functools
import os
import pwd
from pathlib import Path

# Relative to /etc; patterns are expanded on the host. Each entry is a bind mount per
# command, so the list stays short: name lookup, the dynamic loader, time, certificates,
# the distribution's name, MIME types, and the system Python's and Java's own settings.
ETC_ALLOWED = (
    "hosts",
    "host.conf",
    "resolv.conf",
    "nsswitch.conf",
    "protocols",
    "services",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "localtime",
    "timezone",
    "alternatives",
    "ssl/certs",
    "ssl/openssl.cnf",
    "os-release",
    "mime.types",
    "python3",
    "python3.*",
    "java-*",
)
SANDBOX_USER = "codeloop"


@functools.lru_cache(maxsize=8)
def etc_entries(etc_root: Path) -> tuple[str, ...]:
    """The allow-listed names present under `etc_root`, relative to it."""
    found: list[str] = []
    for pattern in ETC_ALLOWED:
        if any(ch in pattern for ch in "*?["):
            found += sorted(str(p.relative_to(etc_root)) for p in etc_root.glob(pattern))
        elif os.path.lexists(etc_root / pattern):
            found.append(pattern)
    return tuple(found)


def identity_files(uid: int, gid: int) -> dict[str, bytes]:
    """passwd and group naming only root, the command's user and nobody (the host's user list
    stays private; tools that look their user up still find it)."""
    name = SANDBOX_USER
    if uid == os.getuid():
        with contextlib.suppress(KeyError):
            name = pwd.getpwuid(uid).pw_name
    passwd = (
        "root:x:0:0:root:/root:/usr/sbin/nologin\n"
        f"{name}:x:{uid}:{gid}:codeloop sandbox:/tmp:/bin/sh\n"
        "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
    )
    group = f"root:x:0:\n{name}:x:{gid}:\nnogroup:x:65534:\n"
    return {"passwd": passwd.encode(), "group": group.encode()}


def data_fd(data: bytes, name: str) -> int:
    """A fresh, rewound memory file holding `data`, for bwrap's `--ro-bind-data FD`."""
    fd = os.memfd_create(f"codeloop-{name}", os.MFD_CLOEXEC)
    os.write(fd, data)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd
