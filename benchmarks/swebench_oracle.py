"""SWE-bench with the oracle models: resolution rate and time per instance on this machine.

Runs `oracle` and `oracle-perturbed` over the chosen instances (environments are built or
reused from the cache; the first run needs PyPI, later runs are offline) and prints, per
model, resolved / not resolved / env_unavailable and the median and p95 of the agent's and
the judge's seconds. The last line is one JSON object with the figures.

    python benchmarks/swebench_oracle.py --instances ../shared/data/swebench/instances.jsonl \
        --mirrors ../.mirror --repo flask --repo marshmallow
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
from codeloop.eval.swebench.evaluate import Evaluation, model_factory, summarize
from codeloop.eval.swebench.harness import Bench
from codeloop.eval.swebench.instances import load_instances


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))] if ordered else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instances", type=Path,
                        default=Path("../shared/data/swebench/instances.jsonl"))
    parser.add_argument("--mirrors", type=Path, default=Path("../.mirror"))
    parser.add_argument("--env-cache", type=Path, default=None)
    parser.add_argument("--repo", action="append", default=None)
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--model", action="append", default=None)
    args = parser.parse_args()
    insts = load_instances(args.instances, repos=args.repo, limit=args.limit)
    bench = Bench(args.mirrors, args.env_cache or default_cache_dir())
    settings = Settings()
    figures: dict[str, float] = {"instances": len(insts)}
    for model in args.model or ["oracle", "oracle-perturbed"]:
        results = list(Evaluation(bench, model_factory(model, settings), settings).run(insts))
        judged = [r for r in results if r.outcome != "env_unavailable"]
        summary = summarize(results)
        agent = [r.agent_s for r in judged]
        judge = [r.judge_s for r in judged]
        print(f"{model}: resolved {summary['resolved']}/{len(judged)} "
              f"({summary['resolved_pct']}%), env_unavailable {summary['env_unavailable']}; "
              f"agent s median {statistics.median(agent) if agent else 0:.2f} "
              f"p95 {_p95(agent):.2f}; judge s median "
              f"{statistics.median(judge) if judge else 0:.2f} p95 {_p95(judge):.2f}")
        for r in results:
            if r.outcome != "resolved":
                print(f"  {r.instance_id}: {r.outcome}: {r.reason[:200]}")
        key = model.replace("-", "_")
        figures.update({
            f"{key}_resolved": summary["resolved"], f"{key}_judged": len(judged),
            f"{key}_resolved_pct": summary["resolved_pct"],
            f"{key}_agent_s_median": round(statistics.median(agent), 3) if agent else 0.0,
            f"{key}_agent_s_p95": round(_p95(agent), 3),
            f"{key}_judge_s_median": round(statistics.median(judge), 3) if judge else 0.0,
            f"{key}_judge_s_p95": round(_p95(judge), 3),
        })
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
