"""`policy.py` run as a user runs it, on a tiny real mirror."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _policy(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"),
                                                         str(ROOT / "benchmarks")])}
    return subprocess.run([sys.executable, str(ROOT / "benchmarks" / "policy.py"), *args],
                          capture_output=True, text=True, env=env, timeout=300, check=False,
                          cwd=tmp_path)


def test_a_few_repeats_still_time_every_command(
        tiny_suite: tuple[Path, Path, str], tmp_path: Path) -> None:
    # `--repeat 3` timed each shell command 3 // 10 = 0 times: the median of nothing crashed.
    _instances, mirrors, _commit = tiny_suite
    proc = _policy(tmp_path, "--mirrors", str(mirrors), "--repos", "acme+shop", "--repeat", "3")
    assert proc.returncode == 0, proc.stderr[-2000:]
    figures = json.loads(proc.stdout.strip().splitlines()[-1])
    assert figures["scan_files"] == 4
    assert figures["shell_split_p50_us"] > 0 and figures["decide_p95_us"] > 0


def test_no_repeats_is_a_clear_error(tiny_suite: tuple[Path, Path, str], tmp_path: Path) -> None:
    _instances, mirrors, _commit = tiny_suite
    proc = _policy(tmp_path, "--mirrors", str(mirrors), "--repeat", "0")
    assert proc.returncode == 2
    assert "--repeat must be at least 1" in proc.stderr and "Traceback" not in proc.stderr
