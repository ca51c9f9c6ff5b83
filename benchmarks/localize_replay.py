"""What the localisation benchmarks share to replay a run: the per-instance scores, the
recorded ranked lists (`--details`) and their fusion again, and the tune/held-out halves."""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

from codeloop.index import pointers
from codeloop.index.rank import Signals, fuse, is_test_path, order
from codeloop.index.service import RepoIndex


def scores(ranked: list[str], gold: list[str]) -> dict[str, float]:
    out = {f"recall_at_{k}": len(set(ranked[:k]) & set(gold)) / len(gold) for k in (1, 5, 10)}
    first = next((i for i, p in enumerate(ranked) if p in gold), None)
    out["mrr"] = 0.0 if first is None else 1.0 / (first + 1)
    return out


REPLAY_DEPTH = 400  # positions of each list kept for replay: all but the rare long tails


def replayable(found: Signals, index: RepoIndex) -> dict[str, Any]:
    """The ranked lists (cut to REPLAY_DEPTH), the BM25 scores of their kept files (the
    best score heads its list, so the score shares replay exactly) and each listed file's
    size (chunks, definitions) and in-degree in the reference graph."""
    lists = {name: ranked[:REPLAY_DEPTH] for name, ranked in found.lists.items()}
    kept = {name: {p: round(found.scores[name][p], 4) for p in lists[name]}
            for name in found.scores}
    sizes = index.file_sizes()
    graph = index.graph()
    indegree = index.memo("indegree", lambda: np.bincount(graph.pair_dst,
                                                           minlength=len(graph.paths)))
    listed = {p for ranked in lists.values() for p in ranked}
    stats = {p: [*sizes.get(p, (0, 0)),
                 int(indegree[graph.index[p]]) if p in graph.index else 0] for p in listed}
    return {"lists": lists, "scores": kept, "stats": stats, "tested": found.tested}


def load_signals(entry: dict[str, Any]) -> Signals:
    """The `Signals` a details entry recorded."""
    recorded = entry["signals"]
    tested = recorded.get("tested")
    if tested is None:
        # Recorded before `Signals.tested`: map the test files among the listed paths (the
        # ranker maps them among all the repository's paths; the lists hold most of them).
        listed = sorted({p for ranked in recorded["lists"].values() for p in ranked})
        stems = pointers._stems(listed, is_test_path)
        tested = {t: s for t in listed if is_test_path(t)
                  if (s := pointers.source_files(stems, t))}
    return Signals(recorded["lists"], recorded["scores"], tested)


def rescored(entry: dict[str, Any]) -> dict[str, dict[str, float]]:
    """`entry`'s scores for our ranking (and for fusion without the learnt reordering) with
    the recorded lists ranked again (the span figure, which needs the index, is kept)."""
    found = load_signals(entry)
    again = scores([p for p, _ in order(found, limit=50)], entry["gold"])
    if "span_in_context_pct" in entry["ours"]:
        again["span_in_context_pct"] = entry["ours"]["span_in_context_pct"]
    return {"ours": again,
            "ours_fusion_only": scores([p for p, _ in fuse(found, limit=50)], entry["gold"])}


def half_of(instance: str) -> str:
    """The instance's half of the set, by a hash of its id: signals are chosen and tuned on
    `tune` and judged on `held_out`."""
    return "tune" if hashlib.blake2b(instance.encode(), digest_size=1).digest()[0] % 2 == 0 \
        else "held_out"
