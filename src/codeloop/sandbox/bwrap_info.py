"""Following bwrap's sandbox init process, to know when every process inside is gone."""

from __future__ import annotations

import contextlib
import json
import os
import select

# How long to wait for the kernel to tear down a killed sandbox's pid namespace.
_TEARDOWN_S = 5.0
_INFO_WAIT_S = 10.0


class SandboxTracker:
    """Reads bwrap's `--info-fd` to pin its init process with a pidfd, then awaits its end."""

    def __init__(self) -> None:
        self._read, self.write_fd = os.pipe2(os.O_CLOEXEC)
        self._open = [self._read, self.write_fd]
        self._pidfd: int | None = None

    def __enter__(self) -> SandboxTracker:
        return self

    def __exit__(self, *_exc: object) -> None:
        for fd in self._open:
            os.close(fd)
        self._open = []
        if self._pidfd is not None:
            os.close(self._pidfd)
            self._pidfd = None

    def started(self) -> None:
        os.close(self.write_fd)
        self._open.remove(self.write_fd)
        data = b""
        while select.select([self._read], [], [], _INFO_WAIT_S)[0]:
            chunk = os.read(self._read, 4096)
            if not chunk:
                break
            data += chunk
        with contextlib.suppress(ValueError, KeyError, ProcessLookupError, OSError):
            pid = int(json.loads(data.decode())["child-pid"])
            self._pidfd = os.pidfd_open(pid)

    def finished(self) -> None:
        """Return once the init process (and with it, the whole pid namespace) has exited.

        The kernel kills every process of the namespace before init's exit completes.
        """
        if self._pidfd is None:
            return
        select.select([self._pidfd], [], [], _TEARDOWN_S)
