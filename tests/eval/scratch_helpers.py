"""Scratch directories as a process killed mid-task leaves them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from codeloop.eval.scratch import KINDS, machine, prefix


def dead_pid() -> int:
    """The pid of a process that has ended (and been reaped)."""
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    return int(proc.stdout)


def orphans(work: Path, pid: int) -> list[Path]:
    """A directory of every kind, as a process `pid` killed mid-task leaves them."""
    made = []
    for kind in KINDS:
        orphan = work / f"{prefix(kind)}{pid}-{machine()}-abc123"
        (orphan / "repo").mkdir(parents=True)
        (orphan / "repo" / "calc.py").write_text("x = 1\n")
        made.append(orphan)
    return made
