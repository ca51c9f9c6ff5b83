"""Learn the weights of `codeloop.index.rerank` from a localize run's recorded lists.

Each instance of a `localize.py --details` file gives the fused head (`rank.fuse`) and its
gold files; every (gold, other head file) pair is one example of a pairwise logistic model
(L2-regularised, each instance weighing the same, fitted by Newton's method): over
`rerank.FEATURES` for the first model (`WEIGHTS`), over `rerank.HEAD_FEATURES` for the
second, which orders the first model's TOP files (`HEAD_WEIGHTS`). The weights are learnt on
the `tune` half (`localize.half_of`) and judged on `held_out`; the reverse (learnt on
held_out, judged on tune) and leave-one-repository-out figures say how much of a gain is
fitting. The last line is JSON with the weights to ship.

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
from localize_replay import half_of, load_signals, scores

from codeloop.index.rank import fuse, is_test_path
from codeloop.index.rerank import (
    FEATURES,
    HEAD_FEATURES,
    HEAD_WEIGHTS,
    RERANK_DEPTH,
    TOP,
    WEIGHTS,
    features,
    list_features,
)

Example = tuple[dict[str, Any], list[str], np.ndarray]
NEGATIVES = 50  # other head files paired with each gold file


def examples(rows: list[dict[str, Any]]) -> list[Example]:
    out = []
    for row in rows:
        found = load_signals(row)
        head = fuse(found, RERANK_DEPTH)
        x = np.hstack([features(head, found, is_test_path), list_features(head, found)])
        out.append((row, [p for p, _ in head], x))
    return out


def learn(data: list[Example], l2: float, used: tuple[str, ...] = FEATURES,
          rounds: int = 30, names: tuple[str, ...] = FEATURES) -> dict[str, float]:
    """Pairwise logistic weights (feature differences gold minus other, label 1) of the
    `used` features among `names` (the others weigh 0)."""
    columns = [HEAD_FEATURES.index(name) for name in used]
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
    return {name: round(learnt.get(name, 0.0), 2) for name in names}


def judged(data: list[Example], weights: dict[str, float] | None,
           head: dict[str, float] | None = None) -> dict[str, float]:
    """Mean recall@1/5/10 and MRR of the head ordered by `weights` (None: fusion alone),
    its first TOP then by `head` if given (as `rerank.rerank` orders them)."""
    rows = []
    for row, paths, x in data:
        if weights is None or not paths:
            ranked = paths
        else:
            model = x[:, :len(FEATURES)] @ np.array([weights[name] for name in FEATURES])
            order = sorted(range(len(paths)), key=lambda i: (-model[i], i))
            if head is not None:
                top = x @ np.array([head[name] for name in HEAD_FEATURES])
                chosen = order[:TOP]
                order[:TOP] = sorted(chosen, key=lambda i: (-top[i], chosen.index(i)))
            ranked = [paths[i] for i in order]
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

    def both(part: list[Example]) -> tuple[dict[str, float], dict[str, float]]:
        return (learn(part, args.l2, used),
                learn(part, args.l2, HEAD_FEATURES, names=HEAD_FEATURES))

    tuned, tuned_head = both(halves["tune"])
    reverse, reverse_head = both(halves["held_out"])
    loro: list[dict[str, float]] = []
    loro_head: list[dict[str, float]] = []
    for repo in sorted({item[0]["repo"] for item in data}):
        weights, head = both([d for d in data if d[0]["repo"] != repo])
        loro.extend(judged([d], weights) for d in data if d[0]["repo"] == repo)
        loro_head.extend(judged([d], weights, head) for d in data if d[0]["repo"] == repo)
    result = {
        "instances": len(data), "l2": args.l2, "weights": tuned, "head_weights": tuned_head,
        "shipped": WEIGHTS, "shipped_head": HEAD_WEIGHTS,
        "fusion": {"all": judged(data, None), "tune": judged(halves["tune"], None),
                   "held_out": judged(halves["held_out"], None)},
        "reranked": {"all": judged(data, tuned), "tune_in_sample": judged(halves["tune"], tuned),
                     "held_out": judged(halves["held_out"], tuned)},
        "with_head": {"all": judged(data, tuned, tuned_head),
                      "tune_in_sample": judged(halves["tune"], tuned, tuned_head),
                      "held_out": judged(halves["held_out"], tuned, tuned_head)},
        "reverse": {"weights": reverse, "head_weights": reverse_head,
                    "tune": judged(halves["tune"], reverse),
                    "tune_with_head": judged(halves["tune"], reverse, reverse_head)},
        "leave_one_repository_out": {k: round(statistics.fmean(r[k] for r in loro), 4)
                                     for k in loro[0]},
        "leave_one_repository_out_with_head": {
            k: round(statistics.fmean(r[k] for r in loro_head), 4) for k in loro_head[0]},
    }
    for name in ("fusion", "reranked", "with_head"):
        for part, figures in result[name].items():
            print(f"{name:>9} {part:>15}: " + "  ".join(f"{k}={v}" for k, v in figures.items()))
    print(f"  reverse (learnt on held_out) on tune: {result['reverse']['tune']}")
    print(f"    with its head model: {result['reverse']['tune_with_head']}")
    print(f"  leave one repository out: {result['leave_one_repository_out']}")
    print(f"    with the head model: {result['leave_one_repository_out_with_head']}")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
