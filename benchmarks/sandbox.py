"""Sandbox costs: spawn overhead of bwrap vs a plain subprocess, overlay set-up and diff.

    PYTHONPATH=src python benchmarks/sandbox.py [--runs 200] [--files 10000]

Goals (issue 5): p99 spawn overhead < 20 ms, diff on a 10,000-file repository < 50 ms.
The last line is one JSON object with the figures.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import resource
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from codeloop.sandbox.bwrap_backend import BwrapSandbox
from codeloop.sandbox.probe import Probe, probe
from codeloop.workspace.copy import CopyWorkspace
from codeloop.workspace.factory import open_workspace


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _times(fn: Callable[[], object], runs: int) -> list[float]:
    fn()  # warm caches (page cache, probe, seccomp program)
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1000)
    return out


def _cpu_ms(fn: Callable[[], object], runs: int) -> float:
    """CPU time (ours plus every descendant's) per call: a cost that machine load does not inflate."""

    def total() -> float:
        own = resource.getrusage(resource.RUSAGE_SELF)
        kids = resource.getrusage(resource.RUSAGE_CHILDREN)
        return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime

    before = total()
    for _ in range(runs):
        fn()
    return (total() - before) * 1000 / runs


def _show(label: str, values: list[float]) -> None:
    print(
        f"{label:<44} median {statistics.median(values):7.2f} ms"
        f"   p95 {_pct(values, 0.95):7.2f} ms   p99 {_pct(values, 0.99):7.2f} ms"
    )


def _make_repo(root: Path, files: int) -> None:
    for i in range(files):
        d = root / f"pkg{i // 100:03d}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"mod{i % 100:02d}.py").write_text(f"VALUE = {i}\n\ndef f():\n    return VALUE\n")
    subprocess.run(["git", "init", "-q", str(root)], check=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--files", type=int, default=10_000)
    args = parser.parse_args()
    caps = probe()
    if not caps.isolation_available or not caps.overlay.ok:
        raise SystemExit(
            f"bwrap overlay unavailable here: {caps.bwrap.detail}; {caps.overlay.detail}"
        )
    load = Path("/proc/loadavg").read_text().split()[0]
    print(
        f"bwrap {caps.bwrap_version}, root: {caps.running_as_root}, runs: {args.runs}, load {load}"
    )

    with tempfile.TemporaryDirectory(prefix="codeloop-bench-") as tmp:
        base = Path(tmp)
        empty = base / "empty"
        empty.mkdir()
        plain = _times(lambda: subprocess.run(["/bin/sh", "-c", "true"], cwd=empty), args.runs)
        sandboxed_box = BwrapSandbox(CopyWorkspace(empty, base / "empty-state"), capabilities=caps)
        sandboxed = _times(
            lambda: sandboxed_box.run("true", cwd=sandboxed_box.workspace.path), args.runs
        )
        _show("plain subprocess `sh -c true`", plain)
        _show("bwrap sandbox `true` (overlay, empty dir)", sandboxed)
        plain_cpu = _cpu_ms(lambda: subprocess.run(["/bin/sh", "-c", "true"], cwd=empty), 50)
        box_cpu = _cpu_ms(lambda: sandboxed_box.run("true", cwd=sandboxed_box.workspace.path), 50)
        print(f"CPU per spawn: plain {plain_cpu:.2f} ms, sandboxed {box_cpu:.2f} ms")

        repo = base / "repo"
        t0 = time.perf_counter()
        _make_repo(repo, args.files)
        print(f"generated {args.files} files in {time.perf_counter() - t0:.1f} s")
        t0 = time.perf_counter()
        ws = open_workspace(repo, base / "state")
        farm_ms = (time.perf_counter() - t0) * 1000
        print(f"workspace build ({ws.kind}, once per session): {farm_ms:.0f} ms")
        big_box = BwrapSandbox(ws, capabilities=caps)
        with_overlay = _times(lambda: big_box.run("true", cwd=ws.path), max(args.runs // 4, 10))
        no_overlay = dataclasses.replace(caps, overlay=Probe(False, "benchmark: plain bind"))
        copy = CopyWorkspace(repo, base / "copy-state")
        bind_box = BwrapSandbox(copy, capabilities=no_overlay)
        with_bind = _times(lambda: bind_box.run("true", cwd=copy.path), max(args.runs // 4, 10))
        _show(f"bwrap `true` over {args.files}-file overlay", with_overlay)
        _show(f"bwrap `true` over {args.files}-file bind", with_bind)

        edit = big_box.run(
            "for i in 0 1 2 3 4 5 6 7 8 9; do echo '# edited' >> pkg00$i/mod0$i.py; done;"
            " for i in 1 2 3 4 5; do echo new > pkg002/new$i.py; done; rm pkg001/mod50.py",
            cwd=ws.path,
        )
        assert edit.exit_code == 0, edit.output
        diffs = _times(ws.diff, 20)
        changed = _times(ws.changed_files, 20)
        _show("workspace.diff() after 16 changes", diffs)
        _show("workspace.changed_files()", changed)
        assert len(ws.changed_files()) == 16, ws.changed_files()

    figures = {
        "spawn_overhead_p50_ms": round(statistics.median(sandboxed) - statistics.median(plain), 2),
        "spawn_overhead_p99_ms": round(_pct(sandboxed, 0.99) - _pct(plain, 0.99), 2),
        "overlay_setup_ms": round(
            statistics.median(with_overlay) - statistics.median(with_bind), 2
        ),
        "overlay_diff_ms": round(statistics.median(diffs), 2),
        "spawn_cpu_ms": round(box_cpu, 2),
        "load_avg": float(load),
    }
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
