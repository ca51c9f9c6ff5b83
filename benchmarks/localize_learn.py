"""Learn the weights of `codeloop.index.rerank` from a localize run's recorded lists.

Each instance of a `localize.py --details` file gives the fused head (`rank.fuse`) and its
gold files; every (gold, other head file) pair is one example of a pairwise logistic model
over `rerank.FEATURES` (L2-regularised, each instance weighing the same, fitted by Newton's
method). The weights are learnt on the `tune` half (`localize.half_of`) and judged on
`held_out`; the reverse (learnt on held_out, judged on tune) and leave-one-repository-out
figures say how much of a gain is fitting. The last line is JSON with the weights to ship.

    PYTHONPATH=src:benchmarks python benchmarks/localize_learn.py all.jsonl
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
from localize import half_of, load_signals, scores

from codeloop.index.rank import fuse, is_test_path
from codeloop.index.rerank import FEATURES, RERANK_DEPTH, WEIGHTS, features

Example = tuple[dict[str, Any], list[str], np.ndarray]
NEGATIVES = 50  # other head files paired with each gold file


def examples(rows: list[dict[str, Any]]) -> list[Example]:
    out = []
    for row in rows:
        found = load_signals(row)
        head = fuse(found, RERANK_DEPTH)
        out.append((row, [p for p, _ in head], features(head, found, is_test_path)))
    return out


def learn(data: list[Example], l2: float, used: tuple[str, ...] = FEATURES,
          rounds: int = 30) -> dict[str, float]:
    """Pairwise logistic weights (feature differences gold minus other, label 1) of the
    `used` features (the others weigh 0)."""
    columns = [FEATURES.index(name) for name in used]
    diffs, weights = [], []
    for row, paths, x in data:
        gold = [i for i, p in enumerate(paths) if p in row["gold"]]
        other = [i for i, p in enumerate(paths) if p not in row["gold"]][:NEGATIVES]
        if not gold or not other:
            continue
        for g in gold:
            diffs.append((x[g] - x[other])[:, columns])
            weights.append(np.full(len(other), 1.0 / (len(gold) * len(other))))
    a, c = np.vstack(diffs), np.concatenate(weights)
    scale = np.abs(a).max(axis=0)
    scale[scale == 0] = 1.0
    a = a / scale
    w = np.zeros(a.shape[1])
    ridge = l2 / len(data)
    for _ in range(rounds):
        p = 1.0 / (1.0 + np.exp(-(a @ w)))
        grad = -(c * (1 - p)) @ a + ridge * w
        hess = (a * (c * p * (1 - p))[:, None]).T @ a + ridge * np.eye(len(w))
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    learnt = dict(zip(used, (w / scale).tolist(), strict=True))
    return {name: round(learnt.get(name, 0.0), 2) for name in FEATURES}


def judged(data: list[Example], weights: dict[str, float] | None) -> dict[str, float]:
    """Mean recall@1/5/10 and MRR of the head ordered by `weights` (None: fusion alone)."""
    rows = []
    for row, paths, x in data:
        if weights is None or not paths:
            ranked = paths
        else:
            model = x @ np.array([weights[name] for name in FEATURES])
            ranked = [paths[i] for i in sorted(range(len(paths)), key=lambda i: (-model[i], i))]
        rows.append(scores(ranked, row["gold"]))
    return {k: round(statistics.fmean(r[k] for r in rows), 4) for k in rows[0]} if rows else {}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("details", type=Path, nargs="+", help="localize.py --details files")
    parser.add_argument("--l2", type=float, default=30.0)
    parser.add_argument("--features", default=",".join(FEATURES),
                        help="the features to learn weights for (the others weigh 0)")
    args = parser.parse_args()
    rows: dict[str, dict[str, Any]] = {}
    for path in args.details:
        for line in path.read_text().splitlines():
            entry = json.loads(line)
            if "signals" in entry and entry.get("gold"):
                rows.setdefault(entry["instance"], entry)
    data = examples(list(rows.values()))
    halves: dict[str, list[Example]] = defaultdict(list)
    for item in data:
        halves[half_of(item[0]["instance"])].append(item)
    used = tuple(args.features.split(","))
    tuned = learn(halves["tune"], args.l2, used)
    reverse = learn(halves["held_out"], args.l2, used)
    loro: list[dict[str, float]] = []
    for repo in sorted({item[0]["repo"] for item in data}):
        weights = learn([d for d in data if d[0]["repo"] != repo], args.l2, used)
        loro.extend(judged([d], weights) for d in data if d[0]["repo"] == repo)
    result = {
        "instances": len(data), "l2": args.l2, "weights": tuned, "shipped": WEIGHTS,
        "fusion": {"all": judged(data, None), "tune": judged(halves["tune"], None),
                   "held_out": judged(halves["held_out"], None)},
        "reranked": {"all": judged(data, tuned), "tune_in_sample": judged(halves["tune"], tuned),
                     "held_out": judged(halves["held_out"], tuned)},
        "reverse": {"weights": reverse, "tune": judged(halves["tune"], reverse)},
        "leave_one_repository_out": {k: round(statistics.fmean(r[k] for r in loro), 4)
                                     for k in loro[0]},
    }
    for name in ("fusion", "reranked"):
        for part, figures in result[name].items():
            print(f"{name:>9} {part:>15}: " + "  ".join(f"{k}={v}" for k, v in figures.items()))
    print(f"  reverse (learnt on held_out) on tune: {result['reverse']['tune']}")
    print(f"  leave one repository out: {result['leave_one_repository_out']}")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
