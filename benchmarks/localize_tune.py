"""Replay the ranker's fusion with other weights on the lists a localize run recorded.

`benchmarks/localize.py --details FILE` stores, per instance, every ranked list
`index.rank.signals` produced and the gold files. Fusion is cheap and deterministic, so
recall for other weights is computed here exactly (to the recorded depth) without
re-indexing anything. The search is a coordinate ascent on recall@5 from the shipped
weights; to tell tuning from fitting it also reports leave-one-repository-out recall (the
weights chosen without a repository, scored on it).

    PYTHONPATH=src python benchmarks/localize_tune.py /tmp/localize.jsonl
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

from codeloop.index.rank import RRF_K, SCORE_WEIGHTS, WEIGHTS, Signals, fuse

STEPS = (0.0, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0)
Weights = dict[str, float]


def load(path: Path) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [r for r in rows if "signals" in r and r.get("gold")]


def recall_at(rows: list[dict[str, Any]], weights: Weights, k: int = 5) -> float:
    total = 0.0
    for row in rows:
        found = Signals(row["signals"]["lists"], row["signals"]["scores"])
        top = {p for p, _ in fuse(found, k, weights, SCORE_WEIGHTS, RRF_K)}
        total += len(top & set(row["gold"])) / len(row["gold"])
    return total / len(rows) if rows else 0.0


def ascend(rows: list[dict[str, Any]], start: Weights, rounds: int = 2) -> Weights:
    """Each list's weight in turn set to the step that maximises recall@5, twice over."""
    best = dict(start)
    score = recall_at(rows, best)
    for _ in range(rounds):
        for name in sorted(best):
            for step in STEPS:
                trial = {**best, name: step}
                value = recall_at(rows, trial)
                if value > score + 1e-9:
                    best, score = trial, value
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("details", type=Path, help="a localize.py --details file")
    parser.add_argument("--no-loro", action="store_true",
                        help="skip the leave-one-repository-out check")
    parser.add_argument("--weights", help="start from these weights (JSON) instead of the "
                        "shipped ones, e.g. search_code's QUERY_WEIGHTS")
    args = parser.parse_args()
    rows = load(args.details)
    if not rows:
        raise SystemExit(f"{args.details} has no recorded signals: run localize.py with "
                         "--details from this version")
    by_repo: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_repo[row["repo"]].append(row)
    shipped = dict(WEIGHTS) if args.weights is None else json.loads(args.weights)
    tuned = ascend(rows, shipped)
    result: dict[str, Any] = {
        "instances": len(rows),
        "shipped_weights": shipped, "shipped_recall_at_5": round(recall_at(rows, shipped), 4),
        "tuned_weights": tuned, "tuned_recall_at_5": round(recall_at(rows, tuned), 4),
    }
    print(f"{len(rows)} instances; shipped {shipped}: recall@5 {result['shipped_recall_at_5']}")
    print(f"tuned in-sample {tuned}: recall@5 {result['tuned_recall_at_5']}")
    if not args.no_loro and len(by_repo) > 1:
        held_out = []
        for repo, test in sorted(by_repo.items()):
            train = [r for r in rows if r["repo"] != repo]
            weights = ascend(train, shipped, rounds=1)
            value = recall_at(test, weights)
            held_out.extend([value] * len(test))
            print(f"  without {repo}: {weights} -> {value:.3f} on its {len(test)}")
        result["loro_recall_at_5"] = round(statistics.fmean(held_out), 4)
        print(f"leave-one-repository-out recall@5 {result['loro_recall_at_5']}")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
