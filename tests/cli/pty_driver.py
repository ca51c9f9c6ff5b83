"""Running the CLI in a real pseudo-terminal and keeping every byte it writes to it.

The terminal is set with no echo and no output processing, so the bytes read back are
exactly the bytes the program wrote (a `\\r` in them was written by the program).
"""

from __future__ import annotations

import errno
import fcntl
import os
import re
import selectors
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tests.cli.test_cli import env_for

# The end of a rich prompt with a default, as in "... (y): " (the default may be styled).
PROMPT_END = re.compile(rb"\)(\x1b\[[0-9;]*m)*: $")


# Something to do to the running program (send a signal, type Ctrl-C), given the process
# and the terminal's master side; it fires once its trigger is met.
Action = Callable[["subprocess.Popen[bytes]", int], None]
# A trigger: bytes the program wrote (stdout or stderr) since the previous action fired,
# or a test of the world outside (the fake server got a request, a command runs).
Trigger = bytes | Callable[[], bool]


@dataclass
class Screen:
    """What one command wrote: to the terminal (`out`) and, unless it went there too, stderr."""

    out: bytes
    err: bytes
    code: int
    prompts: list[bytes] = field(default_factory=list)

    @property
    def text(self) -> str:
        return self.out.decode("utf-8", "replace")


def run_in_pty(tmp: Path, *args: str, answers: tuple[str, ...] = (), marker: bytes = b"approve",
               stderr_to_terminal: bool = False, timeout: float = 240,
               actions: tuple[tuple[Trigger, Action], ...] = (), controlling: bool = False,
               **env: str) -> Screen:
    """Run `codeloop ARGS` with stdin and stdout on a pseudo-terminal; each time a prompt
    containing `marker` (or a follow-up question) waits, type the next answer; `actions`
    fire in order as their triggers are met. With `controlling`, the terminal is the
    program's controlling terminal, so a typed Ctrl-C (\\x03) is a SIGINT from the kernel."""
    master, slave = os.openpty()
    attrs = termios.tcgetattr(slave)
    attrs[1] &= ~termios.OPOST
    attrs[3] &= ~termios.ECHO
    termios.tcsetattr(slave, termios.TCSANOW, attrs)
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 60, 160, 0, 0))
    environment = env_for(tmp, **{"TERM": "xterm-256color", **env})
    for name in ("NO_COLOR", "FORCE_COLOR", "COLUMNS", "LINES"):
        environment.pop(name, None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "codeloop", *args], stdin=slave, stdout=slave,
        stderr=slave if stderr_to_terminal else subprocess.PIPE, env=environment, cwd=tmp,
        start_new_session=controlling,
        preexec_fn=(lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0)) if controlling else None)
    os.close(slave)
    out, err, prompts = bytearray(), bytearray(), []
    pending = list(answers)
    since_answer = 0
    todo, both, since_action = list(actions), bytearray(), 0
    sel = selectors.DefaultSelector()
    sel.register(master, selectors.EVENT_READ)
    if proc.stderr is not None:
        sel.register(proc.stderr, selectors.EVENT_READ)
    deadline = time.monotonic() + timeout
    open_streams = len(sel.get_map())
    try:
        while open_streams and time.monotonic() < deadline:
            for key, _ in sel.select(timeout=0.2):
                chunk = _read(key.fd)
                if not chunk:
                    sel.unregister(key.fd)
                    open_streams -= 1
                    continue
                (out if key.fd == master else err).extend(chunk)
                both.extend(chunk)
            if todo and proc.poll() is None:
                trigger, action = todo[0]
                if (trigger in both[since_action:] if isinstance(trigger, bytes) else trigger()):
                    todo.pop(0)
                    action(proc, master)
                    since_action = len(both)
            waiting = bytes(out[since_answer:])
            if pending and PROMPT_END.search(waiting) and (marker in waiting or prompts):
                prompts.append(waiting)
                os.write(master, (pending.pop(0) + "\n").encode())
                since_answer = len(out)
        code = proc.wait(timeout=max(1.0, deadline - time.monotonic()))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    return Screen(bytes(out), bytes(err), code, prompts)


def _read(fd: int) -> bytes:
    try:
        return os.read(fd, 65536)
    except OSError as exc:  # the terminal's other side closed: the program ended
        if exc.errno == errno.EIO:
            return b""
        raise
