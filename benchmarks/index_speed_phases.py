"""The phases of `index_speed.py` that follow a session's edits (the per-turn refresh after
an edit, a new module, a deleted file; the first context after a pull), and its timing."""

from __future__ import annotations

import posixpath
import random
import statistics
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def timed(fn: Callable[[], object], runs: list[Any]) -> dict[str, float]:
    """Wall-clock p50/p95 and the calling thread's CPU time, which a loaded machine (other
    processes taking turns on the cores) inflates far less than the wall clock."""
    out, cpu = [], []
    for arg in runs:
        started, started_cpu = time.perf_counter(), time.thread_time()
        fn(arg)  # type: ignore[call-arg]
        out.append((time.perf_counter() - started) * 1000)
        cpu.append((time.thread_time() - started_cpu) * 1000)
    return {"p50": round(statistics.median(out), 2), "p95": round(percentile(out, 0.95), 2),
            "cpu_p50": round(statistics.median(cpu), 2),
            "cpu_p95": round(percentile(cpu, 0.95), 2)}


def refresh_context(index: Any, path: str) -> object:
    """A per-turn refresh as the session builds it after the model read `path`."""
    from codeloop.context.retrieval import WHOLE, Seen, build_task_context
    from codeloop.session.context_feed import names_used_by

    text = "\n".join([path, " ".join(names_used_by(index, [path]))])
    return build_task_context(index, text, 3_000, map_share=0.5,
                              seen=Seen(spans={path: [(1, WHOLE)]}), titled=False)


def edit_phases(index: Any, root: Path, rng: random.Random, defs: list[str], edits: int,
                files: int) -> dict[str, dict[str, float]]:
    """The refresh after each of `edits` functions added to random files, `files` new
    modules and `files` deleted ones (any file of the tree, a module others import included)."""

    def refresh_after(rel: str, change: str) -> None:
        """The model adds a function to a file, writes a new module or deletes a file; the
        next turn's refresh follows."""
        name = f"added_by_benchmark_{rng.randrange(10**6)}"
        if change == "new":
            (root / rel).write_text(f"def {name}(value):\n    return {rng.choice(defs)}(value)\n")
        elif change == "removed":
            (root / rel).unlink()
        else:
            with (root / rel).open("a") as fh:
                fh.write(f"\n\ndef {name}():\n    return 0\n")
        index.notify_changed([rel])
        refresh_context(index, rel)

    py_files = [p for p in index.paths() if p.endswith(".py")]
    out = {"context_refresh_after_edit": timed(lambda rel: refresh_after(rel, "edit"),
                                               [rng.choice(py_files) for _ in range(edits)])}
    new_files = [f"{posixpath.dirname(rng.choice(py_files))}/added_by_benchmark_{i}.py"
                 for i in range(files)]
    out["context_refresh_after_new_file"] = timed(lambda rel: refresh_after(rel, "new"),
                                                  new_files)
    out["context_refresh_after_removal"] = timed(lambda rel: refresh_after(rel, "removed"),
                                                 rng.sample(py_files, files))
    return out


def after_pull(root: Path, query: str) -> dict[str, Any]:
    """The next session after a pull: the clean tree (the benchmark's edits undone, its
    graph saved) moved 30 commits back while no index was open; the first context brings
    the saved graph up to date (or builds it)."""
    from codeloop.context.retrieval import build_task_context
    from codeloop.index.service import RepoIndex

    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)

    git("checkout", "-q", "-f", "HEAD")
    git("clean", "-q", "-f", "-d")
    index = RepoIndex(root)
    index.update()
    index.graph()
    index.close()
    git("checkout", "-q", "-f", "--detach", "HEAD~30")
    index = RepoIndex(root)
    touched = index.update().touched
    started = time.perf_counter()
    build_task_context(index, query, 20_000)
    out = {"after_pull_files_touched": touched,
           "after_pull_first_context_build_ms": round((time.perf_counter() - started) * 1000, 1),
           "after_pull_graph_origin": index.graph_origin}
    index.close()
    return out
