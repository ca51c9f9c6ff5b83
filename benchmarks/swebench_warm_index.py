"""SWE-bench: how long a session takes to start when the agent's checkout is reused.

For the given instances (of one repository, one after another) this prepares the agent's
checkout exactly as `codeloop eval swebench` does — `task_checkout`, the project installed
into it (`env.prepare`), the test patch applied — and times `start_session` (the
repository's index brought up to date, then the repo map), with the evaluation's settings.
The agent and the judge do not run: they do not depend on how the checkout was made, and a
sympy instance's verifier runs take minutes here. Two passes, each with an empty index cache
of its own: `fresh` (a new temporary checkout per instance, as before checkouts were reused:
this process holds the reusable checkout's lock, so the evaluation falls back) and `reused`.
Prints each instance's seconds and the median / p95 over the instances after the first, and
the index directories each pass leaves behind; the last line is one JSON object.

    nice -n 10 python benchmarks/swebench_warm_index.py \
        --instances DATA/swebench/instances.jsonl --mirrors MIRRORS \
        --env-cache /tmp/swb/envs --instance sympy__sympy-13286 --instance sympy__sympy-13551 \
        --instance sympy__sympy-13852
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import statistics
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from codeloop.config import Settings
from codeloop.eval.swebench.agent import eval_settings, task_text
from codeloop.eval.swebench.checkout import apply_patch
from codeloop.eval.swebench.harness import Bench
from codeloop.eval.swebench.instances import SweInstance, load_instances
from codeloop.index import store
from codeloop.index.registry import forget_open_indexes
from codeloop.session.setup import start_session
from codeloop.session.store import SQLiteEventStore
from codeloop.tools.defaults import default_registry


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))] if ordered else 0.0


def start_seconds(bench: Bench, inst: SweInstance, scratch: Path) -> float:
    """Prepare the agent's checkout as the evaluation does and time `start_session` on it."""
    env = bench.environment(inst)
    with env.exclusive(), bench.agent_checkout(inst, scratch / "repo") as repo:
        prepared = env.prepare(repo)
        if not prepared.ok:
            raise SystemExit(f"{inst.instance_id}: installing the project failed")
        apply_patch(repo, inst.test_patch, "test patch")
        events = SQLiteEventStore(scratch / "events.sqlite")
        settings = eval_settings(Settings(), inst, env)
        started = time.perf_counter()
        start_session(events, task_text(inst), repo, settings, "oracle", default_registry())
        return time.perf_counter() - started


def run_pass(mode: str, insts: list[SweInstance], args: argparse.Namespace,
             scratch: Path) -> list[float]:
    """One pass over the instances with a new index cache; `fresh` keeps the checkout locked."""
    os.environ["CODELOOP_CACHE_DIR"] = str(scratch / mode / "cache")
    forget_open_indexes()
    work = scratch / mode / "work"
    work.mkdir(parents=True)
    bench = Bench(args.mirrors, args.env_cache, work_dir=work)
    seconds = []
    with ExitStack() as stack:
        if mode == "fresh":
            bench.checkouts.mkdir(parents=True)
            for name in {inst.mirror_name for inst in insts}:
                lock = stack.enter_context((bench.checkouts / f"{name}.lock").open("a"))
                fcntl.flock(lock, fcntl.LOCK_EX)
        for n, inst in enumerate(insts):
            seconds.append(start_seconds(bench, inst, Path(tempfile.mkdtemp(dir=work))))
            print(f"{mode:6} {n + 1}. {inst.instance_id}: start_session {seconds[-1]:.2f} s",
                  flush=True)
    return seconds


def index_left(cache: Path) -> tuple[int, float]:
    """How many index directories the pass left in its cache, and their megabytes."""
    dirs = store.index_dirs(cache)
    size = sum(f.stat().st_size for d in dirs for f in d.rglob("*") if f.is_file())
    return len(dirs), round(size / 1e6, 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--instances", type=Path, required=True)
    parser.add_argument("--mirrors", type=Path, required=True)
    parser.add_argument("--env-cache", type=Path, required=True)
    parser.add_argument("--instance", action="append", required=True,
                        help="an instance id (repeat; two or more of one repository)")
    args = parser.parse_args()
    insts = load_instances(args.instances, ids=args.instance)
    if len(insts) < 2 or len({i.repo for i in insts}) != 1:
        parser.error("give two or more instances of one repository")
    out: dict[str, object] = {"instances": [i.instance_id for i in insts]}
    with tempfile.TemporaryDirectory(prefix="codeloop-warm-") as tmp:
        for mode in ("fresh", "reused"):
            seconds = run_pass(mode, insts, args, Path(tmp))
            later = seconds[1:]
            left, left_mb = index_left(Path(tmp) / mode / "cache")
            print(f"{mode}: first start_session {seconds[0]:.2f} s; later median "
                  f"{statistics.median(later):.2f} s p95 {_p95(later):.2f} s; index dirs "
                  f"left {left} ({left_mb} MB)", flush=True)
            out[mode] = {"first_session_start_s": round(seconds[0], 2),
                         "later_session_start_median_s": round(statistics.median(later), 2),
                         "later_session_start_p95_s": round(_p95(later), 2),
                         "index_dirs_left": left, "index_mb_left": left_mb}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
