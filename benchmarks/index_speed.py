"""Index speed: cold build (and searches during it, from the partial index), incremental
update, tool latency, context build time (the task context and a per-turn refresh, also
right after an edit that adds a function, a new module or a deleted file, and the first
after a pull: `index_speed_phases.py`), peak memory, and a session's time to its first
model call.

Targets: sympy (a clone of the bare mirror, with its history, at a commit) and a
generated tree of `--files` small Python files. Each target runs in its own subprocess so
peak RSS is that target's alone. The last line is one JSON object; its unprefixed keys are
sympy's figures, `generated_*` the generated tree's.

    PYTHONPATH=src python benchmarks/index_speed.py --mirror MIRRORS/sympy+sympy/repo --instances DATA/swebench/instances.jsonl --files 100000
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from index_speed_phases import after_pull, edit_phases, percentile, refresh_context, timed

HERE = Path(__file__).resolve().parent
SYMPY_COMMIT = "e950d313a9"


def generate_tree(root: Path, files: int, seed: int = 7) -> None:
    rng = random.Random(seed)
    words = ["alpha", "beta", "gamma", "delta", "parse", "render", "store", "load", "merge",
             "split", "token", "graph", "node", "edge", "cache", "index", "query", "score"]
    per_dir = 100
    for n in range(files):
        d = root / f"pkg{n // (per_dir * 100)}" / f"mod{(n // per_dir) % 100}"
        if n % per_dir == 0:
            d.mkdir(parents=True, exist_ok=True)
        a, b = rng.sample(words, 2)
        other = rng.randrange(files)
        (d / f"file{n}.py").write_text(
            f'"""Module {n}: {a} and {b}."""\n'
            f"from pkg{other // 10000}.mod{(other // per_dir) % 100}.file{other} import "
            f"{a}_{b}_{other}\n\n\n"
            f"class {a.title()}{b.title()}{n}:\n"
            f"    def {a}_{n}(self, value):\n"
            f"        return {a}_{b}_{other}(value) + {n}\n\n"
            f"    def {b}_{n}(self, items):\n"
            f"        return [self.{a}_{n}(i) for i in items]\n\n\n"
            f"def {a}_{b}_{n}(value):\n"
            f"    return value * {n % 97}\n")


def measure(root: Path, queries: list[str], iterations: int) -> dict[str, Any]:
    """Runs in the child process: everything about one tree."""
    from codeloop.context.retrieval import build_task_context
    from codeloop.index.exact import grep
    from codeloop.index.service import RepoIndex
    from codeloop.sandbox.base import CommandResult, Limits
    from codeloop.tools.base import ToolContext
    from codeloop.tools.search_tools import FindSymbol, SearchCode

    started = time.perf_counter()
    index = RepoIndex(root, background_sweeps=True)
    stats, partial = build_while_searching(index, queries[0])
    cold_s = time.perf_counter() - started

    class DirView:
        """The tools read `ctx.services["index"]`; the workspace is only a path here."""

        def __init__(self, path: Path) -> None:
            self.path = path

    class NoSandbox:
        name = "none"

        def run(self, command: str, cwd: Path, env: dict[str, str] | None = None,
                limits: Limits | None = None) -> CommandResult:
            raise RuntimeError("not used")

    ctx = ToolContext(workspace=DirView(root), sandbox=NoSandbox(),  # type: ignore[arg-type]
                      services={"index": index})
    rng = random.Random(1)
    defs = [str(r[0]) for r in index.db.execute(
        "SELECT name FROM defs WHERE length(name) > 4 ORDER BY random() LIMIT 2000")]
    paths = index.paths()
    names = [rng.choice(defs) for _ in range(iterations)]
    search_queries = [f"{rng.choice(defs)} {rng.choice(defs)}" for _ in range(iterations)]
    search_tool, symbol_tool = SearchCode(), FindSymbol()

    def read(path: str) -> str:
        lines = index.read_lines(path) or []
        return "\n".join(f"{i:>6}│ {line}" for i, line in enumerate(lines[:400], 1))

    started = time.perf_counter()
    commits = len(index.commit_search())  # built once per git HEAD, on the first ranking
    commit_search_ms = (time.perf_counter() - started) * 1000
    started = time.perf_counter()
    build_task_context(index, queries[0], 20_000)
    first_context_ms = (time.perf_counter() - started) * 1000
    index.preload_definitions()  # as a session's index thread does after its first context
    results: dict[str, Any] = {
        "files": stats.scanned, "chunks": index.stats()["chunks"],
        "cold_index_s": round(cold_s, 2), **partial,
        "commits_searched": commits, "commit_search_build_ms": round(commit_search_ms, 1),
        "first_context_build_ms": round(first_context_ms, 1),
        "search_code": timed(lambda q: search_tool.run(SearchCode.args_model(query=q), ctx),
                             search_queries),
        "find_symbol": timed(lambda n: symbol_tool.run(FindSymbol.args_model(name=n), ctx),
                             names),
        "grep": timed(lambda n: grep(root, n, limit=100), names[: max(20, iterations // 4)]),
        "read_file": timed(read, [rng.choice(paths) for _ in range(iterations)]),
        # After one untimed build: a session builds its first on the index's thread, which
        # loads what every later build reuses (the graph, the commit search; then every
        # file's definitions).
        "context_build": timed(lambda q: build_task_context(index, q, 20_000),
                               queries[: max(10, iterations // 10)]),
    }
    # One file changes: the loop (or the watcher) names it; a periodic sweep finds it alone.
    target = root / rng.choice([p for p in paths if p.endswith(".py")])
    one: list[float] = []
    sweep: list[float] = []
    for i in range(5):
        with target.open("a") as fh:
            fh.write(f"\n\ndef added_by_benchmark_{i}():\n    return {i}\n")
        rel = target.relative_to(root).as_posix()
        started = time.perf_counter()
        index.notify_changed([rel])
        one.append((time.perf_counter() - started) * 1000)
        with target.open("a") as fh:
            fh.write(f"\n# touched {i}\n")
        started = time.perf_counter()
        index.update()
        sweep.append((time.perf_counter() - started) * 1000)
    assert index.find_symbol("added_by_benchmark_4"), "the change was not indexed"
    refresh_context(index, paths[0])  # its first call builds a name table, as a session's would
    results["context_refresh"] = timed(lambda p: refresh_context(index, p),
                                       [rng.choice(paths) for _ in range(max(10, iterations // 10))])

    results.update(edit_phases(index, root, rng, defs, max(10, iterations // 10),
                               max(5, iterations // 20)))
    results["incremental_update_ms"] = round(statistics.median(one), 2)
    results["sweep_update_ms"] = round(statistics.median(sweep), 2)
    index.close()
    results["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    # A warm open: the file graph and the commit search come from the store, as in the
    # next session (after the peak RSS, which this second index would add to).
    index = RepoIndex(root)
    index.update()
    started, started_cpu = time.perf_counter(), time.thread_time()
    build_task_context(index, queries[0], 20_000)
    results["warm_first_context_build_ms"] = round((time.perf_counter() - started) * 1000, 1)
    results["warm_first_context_build_cpu_ms"] = round((time.thread_time() - started_cpu)
                                                       * 1000, 1)
    results["warm_graph_origin"] = index.graph_origin
    index.close()
    if (root / ".git").exists():
        results.update(after_pull(root, queries[0]))
    return results


def build_while_searching(index: Any, query: str) -> tuple[Any, dict[str, Any]]:
    """The cold build on a thread, as a session runs it, with a search every second from
    this one: when the first hits come from the partial index, and what a search costs
    while the build goes on."""
    import threading

    done: list[Any] = []
    thread = threading.Thread(target=lambda: done.append(index.update()))
    started = time.perf_counter()
    thread.start()
    first_hit: float | None = None
    latencies: list[float] = []
    while thread.is_alive():
        thread.join(1.0)
        progress = index.progress()
        if progress is None or progress.total is None:
            continue
        begin = time.perf_counter()
        hits = index.search(query, 10)
        latencies.append((time.perf_counter() - begin) * 1000)
        if hits and first_hit is None:
            first_hit = time.perf_counter() - started
    thread.join()
    return done[0], {
        "partial_first_hit_s": round(first_hit, 2) if first_hit is not None else None,
        "partial_searches": len(latencies),
        "partial_search_p50_ms": round(statistics.median(latencies), 1) if latencies else None,
        "partial_search_p95_ms": round(percentile(latencies, 0.95), 1) if latencies else None,
    }


def session_start(root: Path, tmp: Path) -> dict[str, Any]:
    """Seconds from `start_session` to the first model call: with no index (cold), then
    again with the repository's index left by the first session (warm)."""
    from codeloop.config import Settings
    from codeloop.index.store import index_dir
    from codeloop.index.warmup import WARMUP_SERVICE, wait_for_warmups
    from codeloop.llm.scripted import ScriptedModel, Turn
    from codeloop.llm.types import Completion, DeltaCallback, ModelRequest
    from codeloop.session.cleanup import end_run
    from codeloop.session.setup import build_runner, open_store, start_session

    class FirstCall:
        """Finishes at once; remembers when it was first asked and what it was sent."""

        def __init__(self) -> None:
            self.inner = ScriptedModel([Turn(tool_calls=[{"name": "finish",
                                                          "arguments": {"summary": "-"}}])])
            self.name = "first-call"
            self.at: float | None = None
            self.had_context = False

        def complete(self, request: ModelRequest, on_delta: DeltaCallback | None = None
                     ) -> Completion:
            if self.at is None:
                self.at = time.perf_counter()
                self.had_context = any("# Code context" in m.content for m in request.messages)
            return self.inner.complete(request, on_delta)

    out: dict[str, Any] = {}
    store = open_store(tmp / "data")
    task = "Matrix.det() returns nan for a symbolic matrix with zero entries"
    cfg = Settings(verify_on_finish=False)  # the default sandbox: a hard-link workspace
    for name in ("cold", "warm"):
        model = FirstCall()
        begin = time.perf_counter()
        sid = start_session(store, task, root, cfg, model.name)
        runner = build_runner(store, sid, root, cfg, model, base_dir=tmp / "data")
        out[f"session_setup_{name}_s"] = round(time.perf_counter() - begin, 3)
        runner.run()
        assert model.at is not None
        out[f"session_start_{name}_s"] = round(model.at - begin, 3)
        out[f"first_call_had_context_{name}"] = model.had_context
        warmup = runner.ctx.services[WARMUP_SERVICE]
        end_run(runner.ctx)
        # A run that ends early does not wait for its index (`END_WAIT_S`); the next
        # session only starts warm once the cold build has given the repository its copy.
        # Without this wait the "warm" run was a second cold start racing the first build.
        wait_for_warmups()
        # Open and swept; then the task context the first call waited `context_wait_s` for.
        out[f"index_ready_{name}_s"] = round(warmup.ready_after_s, 2)
        feed = runner.context
        out[f"task_context_ready_{name}_s"] = (
            round(feed.prepared_after_s, 2)
            if feed is not None and feed.prepared_after_s is not None else None)
        if not index_dir(root).is_dir():
            raise SystemExit("the cold session left the repository no index: the warm "
                             "start would not be warm")
    return out


def child(args: argparse.Namespace) -> None:
    import os

    with tempfile.TemporaryDirectory(prefix="codeloop-speed-") as tmp:
        os.environ["CODELOOP_CACHE_DIR"] = str(Path(tmp) / "cache")
        root = Path(tmp) / "tree"
        root.mkdir()
        if args.child in ("sympy", "session"):
            # A checkout with its history, as a user's repository: the ranker searches past
            # commit messages. Objects are borrowed from the mirror, not copied.
            subprocess.run(["git", "clone", "-q", "--shared", "--no-checkout", str(args.mirror),
                            str(root)], check=True)
            subprocess.run(["git", "-C", str(root), "checkout", "-q", "--detach", args.commit],
                           check=True)
            rows = [json.loads(x) for x in args.instances.read_text().splitlines() if x.strip()]
            queries = [r["problem_statement"] for r in rows if r["repo"] == "sympy/sympy"]
        else:
            started = time.perf_counter()
            generate_tree(root, args.files)
            print(f"generated {args.files} files in {time.perf_counter() - started:.1f}s",
                  file=sys.stderr)
            queries = [f"render graph node {i} parse tokens and merge the cache" for i in
                       range(50)]
        if args.child == "session":
            print("RESULT " + json.dumps(session_start(root, Path(tmp))), flush=True)
            return
        print("RESULT " + json.dumps(measure(root, queries, args.iterations)), flush=True)


def run_child(target: str, args: argparse.Namespace) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--child", target, "--files", str(args.files),
           "--iterations", str(args.iterations), "--mirror", str(args.mirror),
           "--commit", args.commit, "--instances", str(args.instances)]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            result: dict[str, Any] = json.loads(line[7:])
            return result
    raise SystemExit(f"{target} run failed:\n{proc.stderr[-3000:]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=100_000, help="size of the generated tree")
    parser.add_argument("--iterations", type=int, default=200)
    parser.add_argument("--mirror", type=Path, required=True,
                        help="sympy's bare mirror (MIRRORS/sympy+sympy/repo)")
    parser.add_argument("--commit", default=SYMPY_COMMIT)
    parser.add_argument("--instances", type=Path, required=True,
                        help="SWE-bench instances (JSON lines): sympy's issue texts as queries")
    parser.add_argument("--skip-generated", action="store_true")
    parser.add_argument("--skip-session", action="store_true",
                        help="do not measure the time to a session's first model call")
    parser.add_argument("--child", choices=["sympy", "generated", "session"],
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    if not (args.mirror / "HEAD").is_file():
        parser.error(f"--mirror {args.mirror}: not a bare git repository")
    if not args.instances.is_file():
        parser.error(f"--instances {args.instances}: no such file")
    if args.child:
        child(args)
        return
    sympy = run_child("sympy", args)
    session = None if args.skip_session else run_child("session", args)
    generated = None if args.skip_generated else run_child("generated", args)
    for name, r in [("sympy", sympy), (f"generated {args.files}", generated)]:
        if r is None:
            continue
        print(f"{name}: {r['files']} files, {r['chunks']} chunks, cold {r['cold_index_s']} s, "
              f"incremental {r['incremental_update_ms']} ms (sweep {r['sweep_update_ms']} ms), "
              f"peak RSS {r['peak_rss_mb']} MB")
        if "after_pull_graph_origin" in r:
            print(f"  after a pull ({r['after_pull_files_touched']} files): first context "
                  f"{r['after_pull_first_context_build_ms']} ms, graph "
                  f"{r['after_pull_graph_origin']}")
        for tool in ("search_code", "find_symbol", "grep", "read_file", "context_build",
                     "context_refresh", "context_refresh_after_edit",
                     "context_refresh_after_new_file", "context_refresh_after_removal"):
            print(f"  {tool:>14}: median {r[tool]['p50']} ms  p95 {r[tool]['p95']} ms  "
                  f"(CPU median {r[tool]['cpu_p50']} ms  p95 {r[tool]['cpu_p95']} ms)")

    def flat(r: dict[str, Any], prefix: str = "") -> dict[str, float]:
        return {
            f"{prefix}search_code_p50_ms": r["search_code"]["p50"],
            f"{prefix}search_code_p95_ms": r["search_code"]["p95"],
            f"{prefix}find_symbol_p50_ms": r["find_symbol"]["p50"],
            f"{prefix}find_symbol_p95_ms": r["find_symbol"]["p95"],
            f"{prefix}grep_p50_ms": r["grep"]["p50"],
            f"{prefix}read_file_p50_ms": r["read_file"]["p50"],
            f"{prefix}context_build_p50_ms": r["context_build"]["p50"],
            f"{prefix}context_build_p95_ms": r["context_build"]["p95"],
            f"{prefix}context_build_cpu_p50_ms": r["context_build"]["cpu_p50"],
            f"{prefix}context_build_cpu_p95_ms": r["context_build"]["cpu_p95"],
            f"{prefix}context_refresh_p50_ms": r["context_refresh"]["p50"],
            f"{prefix}context_refresh_p95_ms": r["context_refresh"]["p95"],
            f"{prefix}context_refresh_after_edit_p50_ms": r["context_refresh_after_edit"]["p50"],
            f"{prefix}context_refresh_after_edit_p95_ms": r["context_refresh_after_edit"]["p95"],
            **{f"{prefix}context_refresh_after_{change}_{q}_ms":
               r[f"context_refresh_after_{change}"][q]
               for change in ("new_file", "removal") for q in ("p50", "p95")},
            f"{prefix}incremental_update_ms": r["incremental_update_ms"],
            f"{prefix}sweep_update_ms": r["sweep_update_ms"],
            f"{prefix}cold_index_s": r["cold_index_s"],
            f"{prefix}commit_search_build_ms": r["commit_search_build_ms"],
            f"{prefix}first_context_build_ms": r["first_context_build_ms"],
            f"{prefix}warm_first_context_build_ms": r["warm_first_context_build_ms"],
            f"{prefix}warm_first_context_build_cpu_ms": r["warm_first_context_build_cpu_ms"],
            **{f"{prefix}{k}": r[k] for k in ("after_pull_first_context_build_ms",
                                                "after_pull_files_touched") if k in r},
            f"{prefix}partial_first_hit_s": r["partial_first_hit_s"],
            f"{prefix}partial_search_p50_ms": r["partial_search_p50_ms"],
            f"{prefix}partial_search_p95_ms": r["partial_search_p95_ms"],
            f"{prefix}peak_rss_mb": r["peak_rss_mb"],
            f"{prefix}files": r["files"],
        }

    figures = flat(sympy)
    if session is not None:
        print(f"session start (to the first model call): cold {session['session_start_cold_s']} s, "
              f"warm {session['session_start_warm_s']} s (index ready after "
              f"{session['index_ready_cold_s']} / {session['index_ready_warm_s']} s, task "
              f"context after {session['task_context_ready_cold_s']} / "
              f"{session['task_context_ready_warm_s']} s)")
        figures.update(session)
    if generated is not None:
        figures.update(flat(generated, "generated_"))
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
