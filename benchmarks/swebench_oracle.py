"""SWE-bench with the oracle models: resolution rate and time per instance on this machine.

Runs `oracle` and `oracle-perturbed` over the chosen instances (environments are built or
reused from the cache; the first run needs PyPI, later runs are offline) and prints, per
model, resolved / not resolved / env_unavailable and the median and p95 of the agent's and
the judge's seconds, and the finish gate's figures (finishes blocked, verifier seconds).
The last line is one JSON object with the figures.

    python benchmarks/swebench_oracle.py --instances DATA/swebench/instances.jsonl \
        --mirrors MIRRORS --repo flask --repo marshmallow
    # or the same figures from `codeloop eval swebench --out` files of earlier runs
    python benchmarks/swebench_oracle.py --results oracle.jsonl --results perturbed.jsonl
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from codeloop.config import Settings
from codeloop.eval.swebench.envs import default_cache_dir
from codeloop.eval.swebench.evaluate import (
    Evaluation,
    InstanceResult,
    model_factory,
    summarize,
)
from codeloop.eval.swebench.harness import Bench
from codeloop.eval.swebench.instances import load_instances


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))] if ordered else 0.0


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else 0.0


def report(model: str, results: list[InstanceResult]) -> dict[str, float]:
    """Print one model's line and its unresolved instances; return its figures."""
    judged = [r for r in results if r.outcome != "env_unavailable"]
    summary = summarize(results)
    agent = [r.agent_s for r in judged]
    judge = [r.judge_s for r in judged]
    verify = [r.verify_s for r in judged]
    blocked = sum(r.finish_blocked for r in judged)
    sandboxes = sorted({r.sandbox for r in judged if r.sandbox})
    print(f"{model}: resolved {summary['resolved']}/{len(judged)} "
          f"({summary['resolved_pct']}%), env_unavailable {summary['env_unavailable']}; "
          f"agent s median {_median(agent):.2f} p95 {_p95(agent):.2f}; judge s median "
          f"{_median(judge):.2f} p95 {_p95(judge):.2f}; verifier s median {_median(verify):.2f} "
          f"p95 {_p95(verify):.2f}; finishes blocked {blocked} "
          f"({sum(r.finish_blocked > 0 for r in judged)} instances); sandbox {', '.join(sandboxes)}")
    for r in judged:
        if r.outcome != "resolved" or r.session_status != "finished":
            print(f"  {r.instance_id}: {r.outcome} (session {r.session_status}): {r.reason[:200]}")
    key = model.replace("-", "_")
    return {
        f"{key}_resolved": summary["resolved"], f"{key}_judged": len(judged),
        f"{key}_resolved_pct": summary["resolved_pct"],
        f"{key}_agent_s_median": round(_median(agent), 3), f"{key}_agent_s_p95": round(_p95(agent), 3),
        f"{key}_judge_s_median": round(_median(judge), 3), f"{key}_judge_s_p95": round(_p95(judge), 3),
        f"{key}_verify_s_median": round(_median(verify), 3),
        f"{key}_verify_s_p95": round(_p95(verify), 3),
        f"{key}_finishes_blocked": blocked,
    }


def _from_files(paths: list[Path]) -> dict[str, list[InstanceResult]]:
    """Results of earlier runs by model; a later line for an instance replaces an earlier one."""
    rows: dict[str, dict[str, InstanceResult]] = {}
    for path in paths:
        for line in path.read_text("utf-8").splitlines():
            data = json.loads(line)
            if "instance_id" not in data:
                continue
            result = InstanceResult(**data)
            # Instances whose environment check failed name no model: they count for every one.
            rows.setdefault(result.model, {})[result.instance_id] = result
    env_only = rows.pop("", {})
    for by_id in rows.values():
        for iid, result in env_only.items():
            by_id.setdefault(iid, result)
    return {model: list(by_id.values()) for model, by_id in rows.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instances", type=Path, help="SWE-bench instances JSONL (to run)")
    parser.add_argument("--mirrors", type=Path, help="bare mirrors, OWNER+NAME/repo (to run)")
    parser.add_argument("--env-cache", type=Path, default=None)
    parser.add_argument("--repo", action="append", default=None)
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--model", action="append", default=None)
    parser.add_argument("--results", type=Path, action="append", default=None,
                        help="summarise these `--out` files instead of running")
    args = parser.parse_args()
    figures: dict[str, float] = {}
    if args.results:
        for model, results in sorted(_from_files(args.results).items()):
            figures.update(report(model, results))
        print(json.dumps(figures))
        return
    if args.instances is None or args.mirrors is None:
        parser.error("pass --instances FILE and --mirrors DIR to run, or --results FILE")
    insts = load_instances(args.instances, repos=args.repo, limit=args.limit)
    bench = Bench(args.mirrors, args.env_cache or default_cache_dir())
    settings = Settings()
    figures["instances"] = len(insts)
    for model in args.model or ["oracle", "oracle-perturbed"]:
        results = list(Evaluation(bench, model_factory(model, settings), settings).run(insts))
        figures.update(report(model, results))
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
