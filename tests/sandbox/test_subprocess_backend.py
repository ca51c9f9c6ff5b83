"""The plain backend: exit codes, merged output, deadlines, group kill, caps, environment."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from codeloop.sandbox.base import Limits
from codeloop.sandbox.subprocess_backend import SubprocessSandbox


def _alive(marker: str) -> bool:
    """Whether a process with `marker` in its command line is still around (after a grace)."""
    for _ in range(50):
        if not _running(marker):
            return False
        time.sleep(0.05)
    return True


def _running(marker: str) -> bool:
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker in (entry / "cmdline").read_bytes().decode(errors="replace"):
                    return True
            except OSError:
                continue
    return False


def test_exit_code_and_merged_output(tmp_path: Path) -> None:
    result = SubprocessSandbox().run("echo out; echo err >&2; exit 3", cwd=tmp_path)
    assert result.exit_code == 3
    assert result.output == "out\nerr\n"
    assert not result.timed_out and result.backend == "subprocess"


def test_timeout_kills_children_and_grandchildren(tmp_path: Path) -> None:
    marker = f"4242.{os.getpid()}"
    result = SubprocessSandbox().run(
        f"sh -c 'sleep {marker}1 & sleep {marker}2' & sleep {marker}3",
        cwd=tmp_path,
        limits=Limits(timeout_s=1),
    )
    assert result.timed_out and result.exit_code is None and result.killed_reason == "timeout"
    assert not _alive(marker)


def test_background_children_do_not_outlive_the_command(tmp_path: Path) -> None:
    marker = f"4343.{os.getpid()}"
    result = SubprocessSandbox().run(f"sleep {marker} & echo done", cwd=tmp_path)
    assert result.exit_code == 0 and "done" in result.output
    assert not _alive(marker)


def test_flood_is_capped_with_head_and_tail(tmp_path: Path) -> None:
    result = SubprocessSandbox().run(
        "echo FIRST; head -c 20000000 /dev/zero | tr '\\0' b; echo; echo LAST",
        cwd=tmp_path,
        limits=Limits(max_output_bytes=1000),
    )
    assert result.truncated and result.output_bytes > 20_000_000
    assert result.output.startswith("FIRST") and result.output.rstrip().endswith("LAST")


def test_host_environment_is_not_passed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODELOOP_SUBPROCESS_SECRET", "s3cret")
    result = SubprocessSandbox().run("env", cwd=tmp_path, env={"EXTRA": "1"})
    assert "s3cret" not in result.output
    assert "EXTRA=1" in result.output
