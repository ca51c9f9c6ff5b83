"""Reorder the head of the fused file ranking with two small learnt linear models.

Reciprocal-rank fusion scores each list alone; the first model looks at each head file's
fused place and score beside what fusion cannot see: how many lists agree on the file
(first five of each), whether a test file high in the ranking tests it, and its kind (test,
package `__init__`, path depth). It decides which files take the first TOP places; a second
model, which also sees the file's place in each list, orders those TOP files among
themselves (given the lists' places, a model puts the right file first more often, but
with them alone it chose worse sets of TOP files on the benchmark). The weights
were learnt by pairwise logistic regression (gold file against other head files) on the
`tune` half of the SWE-bench localisation set with `benchmarks/localize_learn.py` and are
shipped here as constants: nothing is learnt at run time.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # rank imports this module to order its fused lists
    from codeloop.index.rank import Signals

# Only the head is reordered: the model was trained on the first RERANK_DEPTH fused files.
RERANK_DEPTH = 50
AGREE_DEPTH = 5  # a list "agrees" on a file that it has among its first five
LIFT_DEPTH = 10

FEATURES = ("place", "log_place", "relative_score", "lists_agree", "tested_by_head",
            "test", "package_init", "depth")
LISTS = ("files", "chunks", "mentions", "pagerank", "paths", "history", "frames", "modules",
         "methods")
# The lists `lists_agree` counts: those of the benchmark run the weights were checked on. A
# list added later changes nothing here until the models are learnt again with it.
AGREE_LISTS = (*LISTS, "classes")
LIST_DEPTH = 50  # a file's place in a list counts among that list's first LIST_DEPTH
TOP = 5  # the places the second model orders
HEAD_FEATURES = FEATURES + tuple(f"in_{name}" for name in LISTS)
# Learnt on the tune half of all 347 instances (2026-11-26; see the module docstring):
# `benchmarks/localize_learn.py DETAILS` prints them.
WEIGHTS: dict[str, float] = {
    "place": 0.99, "log_place": -0.66, "relative_score": 2.21, "lists_agree": 0.15,
    "tested_by_head": 0.96, "test": -2.37, "package_init": -1.26, "depth": 0.03,
}

# The second model, learnt the same way over HEAD_FEATURES (2026-11-26).
HEAD_WEIGHTS: dict[str, float] = {
    "place": 0.72, "log_place": -0.65, "relative_score": 1.88, "lists_agree": 0.05,
    "tested_by_head": 1.06, "test": -2.49, "package_init": -1.21, "depth": 0.05,
    "in_files": 0.64, "in_chunks": 0.86, "in_mentions": 0.73, "in_pagerank": -0.73,
    "in_paths": 0.29, "in_history": 0.42, "in_frames": 0.06, "in_modules": 0.1,
    "in_methods": 0.53,
}


def features(fused: list[tuple[str, float]], found: Signals,
             is_test: Callable[[str], bool]) -> np.ndarray:
    """One row of FEATURES per file of `fused` (best first), from the lists in `found`."""
    top = fused[0][1] if fused and fused[0][1] > 0 else 1.0
    agree: dict[str, int] = {}
    for name in AGREE_LISTS:
        for path in found.lists.get(name, [])[:AGREE_DEPTH]:
            agree[path] = agree.get(path, 0) + 1
    tested_by: dict[str, float] = {}
    for place, (path, _score) in enumerate(fused[:LIFT_DEPTH]):
        for source in found.tested.get(path, []):
            tested_by[source] = max(tested_by.get(source, 0.0), 1.0 / (1 + place))
    rows = []
    for place, (path, score) in enumerate(fused):
        rows.append([
            1.0 / (1 + place), math.log(1 + place), score / top, float(agree.get(path, 0)),
            tested_by.get(path, 0.0), float(is_test(path)),
            float(path.endswith("__init__.py")), path.count("/") / 5,
        ])
    return np.array(rows, dtype=float).reshape(len(rows), len(FEATURES))


def list_features(fused: list[tuple[str, float]], found: Signals) -> np.ndarray:
    """One row per file of `fused`: 1/(1 + its place) in each of LISTS (0 when not among
    the list's first LIST_DEPTH)."""
    rows = np.zeros((len(fused), len(LISTS)))
    row_of = {path: i for i, (path, _score) in enumerate(fused)}
    for column, name in enumerate(LISTS):
        for place, path in enumerate(found.lists.get(name, [])[:LIST_DEPTH]):
            if path in row_of:
                rows[row_of[path], column] = 1.0 / (1 + place)
    return rows


def rerank(fused: list[tuple[str, float]], found: Signals, is_test: Callable[[str], bool],
           weights: dict[str, float] | None = None,
           head_weights: dict[str, float] | None = None) -> list[tuple[str, float]]:
    """`fused` with its first RERANK_DEPTH files in the first model's order and its first
    TOP in the second's; each place keeps the fused score of that place, so scores stay on
    fusion's scale and in order for callers that fuse further (embeddings)."""
    head = fused[:RERANK_DEPTH]
    if len(head) < 2:
        return fused
    weights = WEIGHTS if weights is None else weights
    head_weights = HEAD_WEIGHTS if head_weights is None else head_weights
    x = features(head, found, is_test)
    model = x @ np.array([weights.get(name, 0.0) for name in FEATURES])
    # Stable on ties: the fused order decides between equal model scores.
    order = sorted(range(len(head)), key=lambda i: (-model[i], i))
    top = np.hstack([x, list_features(head, found)]) @ np.array(
        [head_weights.get(name, 0.0) for name in HEAD_FEATURES])
    chosen = order[:TOP]  # ties keep the first model's order
    order[:TOP] = sorted(chosen, key=lambda i: (-top[i], chosen.index(i)))
    return [(head[i][0], head[place][1]) for place, i in enumerate(order)] + fused[RERANK_DEPTH:]
