"""Benchmark the overlay workspace on a generated repository (10,000 files by default).

The generated repository is kept in benchmarks/.cache/ for later runs. Measures: building the
merged view (hard-link farm; one full copy as the baseline), finding the
changes and rendering the diff after a few edits (in the same process, and reopened as a new
process would), and apply. Prints median and p95; the last line is one JSON object.

    PYTHONPATH=src python benchmarks/workspace.py [--files 10000] [--repeat 20]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

from codeloop.workspace.factory import open_workspace
from codeloop.workspace.safe_git import git


def generate(root: Path, files: int) -> None:
    """A Python-project-like tree: 4 levels of packages, files of 1-3 KB, committed and packed."""
    per_dir = 40
    for i in range(files):
        d = root / f"pkg{i // (per_dir * 25) % 10}" / f"sub{i // per_dir % 25}"
        d.mkdir(parents=True, exist_ok=True)
        body = "".join(f"def f{i}_{j}(x):\n    return x * {j} + {i}\n\n" for j in range(20 + i % 40))
        (d / f"mod{i}.py").write_text(body)
    git(["init", "-q"], root)
    git(["-c", "gc.auto=0", "add", "-A"], root)
    git(["-c", "gc.auto=0", "-c", "user.name=bench", "-c", "user.email=bench@example.invalid",
         "commit", "-qm", "generated"], root)
    git(["gc", "-q"], root)


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000


def summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {"p50": round(statistics.median(ordered), 2), "p95": round(p95, 2)}


def edit_some(ws_write: Callable[[str, bytes], None], round_no: int) -> None:
    for k in range(5):
        ws_write(f"pkg{k}/sub{k}/mod{k * 1000 + k * 40}.py", f"# edit {round_no}\n".encode())
    ws_write(f"pkg9/new_{round_no}.py", b"NEW = 1\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()

    cache = Path(__file__).parent / ".cache"
    cache.mkdir(exist_ok=True)
    base = Path(tempfile.mkdtemp(prefix="bench-ws-", dir=cache))
    try:
        pristine = cache / f"workspace-repo-{args.files}"
        if not (pristine / ".git").is_dir():
            shutil.rmtree(pristine, ignore_errors=True)
            pristine.mkdir()
            start = time.perf_counter()
            generate(pristine, args.files)
            print(f"generated {args.files} files in {time.perf_counter() - start:.1f} s")
        repo = base / "repo"
        shutil.copytree(pristine, repo, symlinks=True)  # apply changes it; keep the cache clean

        farm = [timed(partial(open_workspace, repo, base / f"farm{n}"))
                for n in range(max(3, args.repeat // 4))]
        copy_ms = timed(lambda: open_workspace(repo, base / "copy", prefer="copy"))
        # Peer: coreutils builds the same link farm in C (without recording anything).
        cp_al = [timed(partial(subprocess.run, ["cp", "-al", str(repo), str(base / f"cpal{n}")],
                               check=True))
                 for n in range(3)]

        ws = open_workspace(repo, base / "main")
        edit_some(ws.write, 0)
        changed = [timed(ws.changed_files) for _ in range(args.repeat)]
        diffs = [timed(ws.diff) for _ in range(args.repeat)]
        reopen = [timed(lambda: open_workspace(repo, base / "main").diff())
                  for _ in range(args.repeat)]
        git_status = [timed(lambda: git(["status", "--porcelain"], repo))
                      for _ in range(max(3, args.repeat // 4))]

        applies = []
        for r in range(1, max(3, args.repeat // 4) + 1):
            edit_some(ws.write, r)
            applies.append(timed(ws.apply))
        undo_ms = timed(ws.undo)

        figures = {
            "files": args.files,
            "farm_setup_ms": summary(farm),
            "copy_setup_ms": round(copy_ms, 1),
            "peer_cp_al_ms": summary(cp_al),
            "changed_files_ms": summary(changed),
            "diff_ms": summary(diffs),
            "reopen_diff_ms": summary(reopen),
            "git_status_ms": summary(git_status),
            "apply_ms": summary(applies),
            "undo_ms": round(undo_ms, 2),
        }
        for key, value in figures.items():
            print(f"{key:18} {value}")
        print(json.dumps(figures))
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    os.umask(0o022)
    main()
