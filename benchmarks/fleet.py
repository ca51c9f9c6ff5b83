"""The fleet on one machine: N oracle `eval run` tasks on generated repositories, as Ray tasks
on a local two-node cluster (a head and a worker node, 1 CPU each) with 1 worker vs 2 workers
(speed-up); the round trip of an empty Ray task (scheduling overhead, median/p95); event-store
appends PostgreSQL vs SQLite (store_append.timed_appends); and the worker-kill runs of
fleet_kills.run_kills (sessions resumed with the same diff, events lost or duplicated).

Usage: python benchmarks/fleet.py [--instances 40] [--kills 20] [--appends 2000] [--url URL]
  --kills 0 skips the kill runs; --url is an admin URL of a PostgreSQL server (default: a
  throw-away cluster from the Debian binaries, as store_append.py starts).
Goals (issue 21): kills_recovered = kills, events lost = duplicated = 0, pg append p50 < 5 ms.
The speed-up is bounded by the machine's cores: the load average is printed beside it.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from event_store import pct
from store_append import timed_appends
from tests.fleet.ray_nodes import LocalRayCluster
from tests.pg import fresh_database, postgres_server

from codeloop.config import load_settings
from codeloop.eval.suite.run import SuiteRun, blank_result, run_task
from codeloop.eval.suite.tasks import SuiteTask
from codeloop.fleet import cluster
from codeloop.fleet.eval_dispatch import dispatch
from codeloop.session.stores import open_event_store

TESTS = ("import unittest\nfrom calc import {name}\n\n\nclass T(unittest.TestCase):\n"
         "    def test_{name}(self):\n        self.assertEqual({name}(2, {k}), {total})\n\n"
         "    def test_zero(self):\n        self.assertEqual({name}(0, 0), 0)\n")


def generated_task(index: int) -> SuiteTask:
    """A repository of its own per task: one function that subtracts where it should add."""
    name, k = f"add_{index}", index + 3
    calc = f"def {name}(a, b):\n    return a - b\n"
    gold = (f"diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n"
            f" def {name}(a, b):\n-    return a - b\n+    return a + b\n")
    return SuiteTask.model_validate({
        "id": f"gen-{index:03d}", "language": "python", "task": f"{name}() subtracts; make it add",
        "files": {"calc.py": calc, "test_calc.py": TESTS.format(name=name, k=k, total=2 + k)},
        "test_command": "python3 -B -m unittest -v test_calc", "parser": "unittest",
        "protected": ["test_calc.py"], "FAIL_TO_PASS": [f"test_calc.py::T::test_{name}"],
        "PASS_TO_PASS": ["test_calc.py::T::test_zero"], "gold_patch": gold, "time_limit_s": 600})


def timed_run(tasks: list[SuiteTask], run: SuiteRun, workers: int) -> dict[str, Any]:
    begin = time.perf_counter()
    results = list(dispatch(run_task, tasks, run, lambda t: blank_result(t, run), workers))
    wall = time.perf_counter() - begin
    return {"wall_s": round(wall, 1), "resolved": sum(r.outcome == "resolved" for r in results),
            "nodes": len({r.node for r in results}), "tasks": len(results)}


def scheduling_overhead(rounds: int) -> list[float]:
    """Milliseconds from submitting an empty task to holding its result, one at a time."""
    ray = cluster.ray_module()
    empty = ray.remote(num_cpus=1)(lambda: None)
    ray.get(empty.remote())  # a worker is up before the clock starts
    times = []
    for _ in range(rounds):
        begin = time.perf_counter()
        ray.get(empty.remote())
        times.append((time.perf_counter() - begin) * 1000)
    return times


def appends(n: int, url: str) -> dict[str, float]:
    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        sqlite = open_event_store(tmp, url=None)
        sqlite_times = timed_appends(sqlite, n)
        sqlite.close()
        pg = open_event_store(url=stack.enter_context(fresh_database(
            url or stack.enter_context(postgres_server(durable=True)))))
        pg_times = timed_appends(pg, n)
        pg.close()
    return {"pg_append_p50_ms": round(statistics.median(pg_times), 3),
            "pg_append_p99_ms": round(pct(pg_times, 0.99), 3),
            "sqlite_append_p50_ms": round(statistics.median(sqlite_times), 3),
            "sqlite_append_p99_ms": round(pct(sqlite_times, 0.99), 3)}


def kill_runs(n: int) -> dict[str, Any]:
    """fleet_kills.run_kills(n): the worker-kill test repeated n times (its own module)."""
    if n <= 0:
        return {"kills": 0, "kills_recovered": 0, "events_lost": None, "events_duplicated": None}
    from fleet_kills import run_kills

    found: dict[str, Any] = run_kills(n)
    return {key: found.get(key) for key in
            ("kills", "kills_recovered", "events_lost", "events_duplicated")}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--instances", type=int, default=40)
    parser.add_argument("--kills", type=int, default=20, help="0 skips the worker-kill runs")
    parser.add_argument("--appends", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=200, help="empty tasks timed")
    parser.add_argument("--url", default="", help="an admin URL of a PostgreSQL server")
    args = parser.parse_args()
    load_before = os.getloadavg()
    # First, while this process has never joined a cluster: run_kills starts its own.
    kills = kill_runs(args.kills)
    tasks = [generated_task(i) for i in range(args.instances)]
    nodes = LocalRayCluster(workers=1)
    saved = dict(os.environ)
    os.environ.update(nodes.driver_env)
    runs: dict[int, dict[str, Any]] = {}
    try:
        cluster.connect(nodes.address)
        sched = scheduling_overhead(args.rounds)
        with tempfile.TemporaryDirectory(prefix="codeloop-fleet-") as work:
            run = SuiteRun("oracle", load_settings(), Path(work))
            timed_run(tasks[:2], run, 2)  # each node's worker has imported codeloop
            for workers in (1, 2):
                runs[workers] = timed_run(tasks, run, workers)
                print(f"{workers} worker(s): {runs[workers]}", flush=True)
    finally:
        cluster.disconnect()
        nodes.close()
        os.environ.clear()
        os.environ.update(saved)
    load_after = os.getloadavg()
    result: dict[str, Any] = {
        "instances": args.instances,
        "speedup_2_workers": round(runs[1]["wall_s"] / runs[2]["wall_s"], 2),
        "wall_s_1_worker": runs[1]["wall_s"], "wall_s_2_workers": runs[2]["wall_s"],
        "resolved": [runs[1]["resolved"], runs[2]["resolved"]],
        "nodes_used_2_workers": runs[2]["nodes"],
        "sched_overhead_ms": round(statistics.median(sched), 2),
        "sched_overhead_p95_ms": round(pct(sched, 0.95), 2),
        **appends(args.appends, args.url),
        **kills,
        "cores": os.cpu_count(),
        "load_avg_1m": [round(load_before[0], 1), round(load_after[0], 1)],
    }
    print(f"empty Ray task round trip: median {result['sched_overhead_ms']} ms, "
          f"p95 {result['sched_overhead_p95_ms']} ms ({args.rounds} tasks)")
    print(f"speed-up with 2 workers: {result['speedup_2_workers']}x on {result['cores']} cores, "
          f"1-minute load average {result['load_avg_1m'][0]} before, "
          f"{result['load_avg_1m'][1]} after")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
