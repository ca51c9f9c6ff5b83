"""The command-execution interface every sandbox backend implements."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol


def default_max_tasks() -> int:
    """Room for a parallel build's tasks on this machine: a build runs about a process per
    core, each with about a thread per core (Go's compilers, JVMs), never under 1024."""
    return max(1024, 32 * (os.cpu_count() or 1))


@dataclass(frozen=True)
class Limits:
    timeout_s: float = 120.0
    memory_mb: int = 4096
    max_output_bytes: int = 64_000
    # Tasks of the command's tree: processes and their threads (as the pids cgroup counts).
    max_processes: int = field(default_factory=default_max_tasks)
    max_file_mb: int = 1024
    max_open_files: int = 1024
    # CPU seconds per process; None: as many as the timeout has wall seconds, so a long
    # single-threaded test run ends by its deadline, not by SIGXCPU before it.
    cpu_s: int | None = None

    @property
    def cpu_seconds(self) -> int:
        return self.cpu_s if self.cpu_s is not None else max(1, math.ceil(self.timeout_s))


@dataclass
class CommandResult:
    exit_code: int | None
    output: str
    duration_ms: float
    timed_out: bool = False
    killed_reason: str | None = None
    truncated: bool = False
    output_bytes: int = 0
    backend: str = "subprocess"
    notes: list[str] = field(default_factory=list)


class Sandbox(Protocol):
    name: str

    def run(
        self,
        command: str,
        cwd: Path,
        env: dict[str, str] | None = None,
        limits: Limits | None = None,
    ) -> CommandResult:
        """Run a shell command with `cwd` as the working directory; never raises on failure."""
        ...


def cap_output(data: bytes, limit: int) -> tuple[str, bool]:
    """Keep the head and tail of `data` within `limit` bytes, noting what was cut."""
    if len(data) <= limit:
        return data.decode("utf-8", "replace"), False
    half = limit // 2
    cut = len(data) - 2 * half
    head = data[:half].decode("utf-8", "replace")
    tail = data[-half:].decode("utf-8", "replace")
    return f"{head}\n[... {cut} bytes of output omitted ...]\n{tail}", True
