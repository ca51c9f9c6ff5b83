"""Run one process with merged output read as a stream, a deadline, and a whole-tree kill."""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from codeloop.sandbox.base import CommandResult
from codeloop.sandbox.capture import HeadTail

_CHUNK = 1 << 16
_LIMIT_EXITS = {128 + signal.SIGXCPU: "CPU time limit, SIGXCPU",
                128 + signal.SIGXFSZ: "file size limit, SIGXFSZ"}
# After the main process exits, a straggler may still hold the pipe open; wait this long.
_DRAIN_S = 0.5
# Called with the process's pid while it runs; returns the whole-command limit it broke.
Guard = Callable[[int], "str | None"]


@dataclass
class ProcessOutcome:
    exit_code: int | None
    output: str
    truncated: bool
    output_bytes: int
    duration_ms: float
    timed_out: bool
    # A whole-command limit the guard saw broken (the command was killed for it).
    limit: str | None = None

    @property
    def killed_reason(self) -> str | None:
        if self.limit is not None:
            return self.limit
        if self.timed_out:
            return "timeout"
        if self.exit_code is not None and self.exit_code < 0:
            try:
                return f"signal {signal.Signals(-self.exit_code).name}"
            except ValueError:
                return f"signal {-self.exit_code}"
        # A shell (or bwrap) in between reports a child a limit killed as 128 + the signal.
        return _LIMIT_EXITS.get(self.exit_code) if self.exit_code is not None else None

    def result(self, backend: str, notes: list[str] | None = None) -> CommandResult:
        """The outcome as a backend reports it."""
        return CommandResult(
            exit_code=self.exit_code, output=self.output, duration_ms=self.duration_ms,
            timed_out=self.timed_out, killed_reason=self.killed_reason,
            truncated=self.truncated, output_bytes=self.output_bytes, backend=backend,
            notes=notes or [],
        )


def _has_exited(pid: int) -> bool:
    """True once `pid` has exited, without reaping it (so its pgid cannot be reused yet)."""
    info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    return info is not None


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


# The process groups of the commands running now, each in the set only while its leader is
# unreaped (so the group id cannot have been reused).
_RUNNING: set[int] = set()


def kill_running() -> None:
    """Kill every command this process runs: for a CLI about to quit without cleaning up."""
    for pgid in list(_RUNNING):
        _kill_group(pgid)


def run_process(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: dict[str, str],
    timeout_s: float,
    max_output_bytes: int,
    pass_fds: Sequence[int] = (),
    preexec_fn: Callable[[], None] | None = None,
    started: Callable[[int], None] | None = None,
    finished: Callable[[], None] | None = None,
    guard: Guard | None = None,
) -> ProcessOutcome:
    """Start `argv` in a new session, stream its output, and kill its process group at the end.

    `started` runs right after the spawn (with the pid), `finished` after the kill (backends
    hook their bookkeeping there). `guard`, called with the pid while the process runs, names a limit
    the command broke; the process group is then killed.
    """
    t0 = time.monotonic()
    proc = subprocess.Popen(
        list(argv),
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        pass_fds=tuple(pass_fds),
        preexec_fn=preexec_fn,
    )
    assert proc.stdout is not None
    _RUNNING.add(proc.pid)
    capture = HeadTail(max_output_bytes)
    try:
        if started is not None:
            started(proc.pid)
        timed_out, limit = _pump(proc, capture, t0 + timeout_s, guard)
    finally:
        _kill_group(proc.pid)
        _RUNNING.discard(proc.pid)
    if finished is not None:
        finished()
    proc.stdout.close()
    try:
        code = proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()
        code = proc.wait()
    text, truncated = capture.render()
    return ProcessOutcome(
        exit_code=None if timed_out else code,
        output=text,
        truncated=truncated,
        output_bytes=capture.total,
        duration_ms=(time.monotonic() - t0) * 1000,
        timed_out=timed_out,
        limit=limit,
    )


def _pump(proc: subprocess.Popen[bytes], capture: HeadTail, deadline: float,
          guard: Guard | None) -> tuple[bool, str | None]:
    """Feed the output into `capture` until EOF or the deadline.

    Returns whether the deadline hit, and the limit `guard` reported (if it did).
    """
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    os.set_blocking(fd, False)
    exited_at: float | None = None
    limit: str | None = None
    with selectors.DefaultSelector() as sel:
        sel.register(fd, selectors.EVENT_READ)
        while True:
            now = time.monotonic()
            if now >= deadline:
                return True, limit
            if exited_at is None and _has_exited(proc.pid):
                exited_at = now
                # Stragglers of the group would keep the pipe open forever.
                _kill_group(proc.pid)
            if exited_at is None and limit is None and guard is not None:
                limit = guard(proc.pid)
                if limit is not None:
                    _kill_group(proc.pid)
            if exited_at is not None and now - exited_at > _DRAIN_S:
                return False, limit
            wait = min(deadline - now, 0.05 if exited_at is None else _DRAIN_S)
            for _key, _ev in sel.select(wait):
                try:
                    chunk = os.read(fd, _CHUNK)
                except BlockingIOError:
                    continue
                if not chunk:
                    return False, limit
                capture.feed(chunk)
