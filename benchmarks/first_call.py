"""Time to the first model call of `codeloop run` as a user starts it: a new process on a
sympy clone, the model a local server speaking the OpenAI wire protocol on 127.0.0.1.

    PYTHONPATH=src python benchmarks/first_call.py --mirror MIRRORS/sympy+sympy/repo [--runs 7]

The first run has no index (cold); the others find the index the first left (warm). Each
is measured from the process's start to the model server receiving the first request, and
whether that request carried the task context. The last output line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.llm.fake_server import FakeProvider, Reply, openai_stream

COMMIT = "e950d313a9"
TASK = "The sign function is printed wrongly in Fortran code"
CONTEXT_HEADER = "# Code context for the task"


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def one_run(repo: Path, base: Path) -> tuple[float, bool]:
    """Seconds from the process's start to the first request, and whether that request
    held the task context."""
    finish = openai_stream("", [("c1", "finish", '{"summary": "nothing to do"}')], (10, 1, 0))
    fake = FakeProvider(replies=[Reply(sse=finish)]).start()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CODELOOP_", "OPENAI_"))}
    env.update(HOME=str(base / "home"), XDG_CONFIG_HOME=str(base / "config"),
               CODELOOP_DATA_DIR=str(base / "data"), OPENAI_API_KEY="sk-local",
               CODELOOP_EMBEDDINGS="0")
    argv = [sys.executable, "-m", "codeloop", "run", TASK, "--repo", str(repo),
            "--model", "openai:gpt-4o", "--base-url", fake.url + "/v1",
            "--approval-mode", "full-auto", "--max-steps", "1"]
    try:
        began = time.perf_counter()
        proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        while not fake.requests and proc.poll() is None:
            time.sleep(0.002)
        first = time.perf_counter() - began
        proc.wait(timeout=600)
    finally:
        fake.stop()
    if not fake.requests:
        raise SystemExit(f"codeloop run made no model call (exit {proc.returncode})")
    return first, CONTEXT_HEADER in json.dumps(fake.requests[0]["json"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirror", type=Path, required=True, help="a bare clone of sympy")
    parser.add_argument("--runs", type=int, default=7, help="warm runs")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        repo = base / "sympy"
        subprocess.run(["git", "clone", "-q", "--shared", "--no-checkout", str(args.mirror),
                        str(repo)], check=True)
        subprocess.run(["git", "-C", str(repo), "checkout", "-q", "--detach", COMMIT],
                       check=True)
        cold, cold_context = one_run(repo, base)
        print(f"cold: first call after {cold:.2f} s (task context: {cold_context})", flush=True)
        warm = [one_run(repo, base) for _ in range(args.runs)]
        seconds = [s for s, _ in warm]
        print(f"warm: first call median {statistics.median(seconds):.3f} s, p95 "
              f"{_p95(seconds):.3f} s; with the task context {sum(c for _, c in warm)} of "
              f"{len(warm)}")
    print(json.dumps({"first_call_cold_s": round(cold, 3),
                      "first_call_warm_median_s": round(statistics.median(seconds), 3),
                      "first_call_warm_p95_s": round(_p95(seconds), 3),
                      "warm_with_context": sum(c for _, c in warm), "warm_runs": len(warm)}))


if __name__ == "__main__":
    main()
