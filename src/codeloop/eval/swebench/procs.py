"""Running a shell command with a deadline, killing its whole process group on timeout."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass
class ShellResult:
    exit_code: int | None
    output: str
    seconds: float
    timed_out: bool = False

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out

    def tail(self, lines: int = 20) -> str:
        return "\n".join(self.output.splitlines()[-lines:])


def run_shell(command: str, cwd: Path, env: dict[str, str], timeout_s: float) -> ShellResult:
    """Run `command` with bash in `cwd`; stdout and stderr are merged as the harness logs them."""
    start = time.monotonic()
    proc = subprocess.Popen(
        ["bash", "-c", command], cwd=cwd, env=env, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
    )
    try:
        out, _ = proc.communicate(timeout=timeout_s)
        timed_out = False
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        timed_out = True
    return ShellResult(
        exit_code=None if timed_out else proc.returncode,
        output=out.decode("utf-8", "replace"),
        seconds=time.monotonic() - start,
        timed_out=timed_out,
    )
