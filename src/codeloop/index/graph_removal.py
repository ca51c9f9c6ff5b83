"""Files taken out of the file graph without reading their referrers again.

A removed file's edges go; what else changes is known without the store's rows of the
files that pointed at it: an edge naming something the file defined is weighted by that
name's definers (one fewer now), and an import that resolved to it may resolve to the next
candidate. Redoing those referrers from the store instead (`graph.with_file_edges`) cost a
turn 100-140 ms on sympy for a module that 100-240 files use.
"""

from __future__ import annotations

import sqlite3
from collections import defaultdict

import numpy as np
from numpy.typing import NDArray

from codeloop.index.graph import (
    FileGraph,
    carried,
    derive_redone,
    discounted,
    files_defining,
    module_candidates,
    name_weight,
    rows_for,
    with_paths,
)


def without_files(graph: FileGraph, db: sqlite3.Connection, removed: set[str]) -> FileGraph:
    """`graph` without `removed` (files of it whose rows are gone from the store `db`) and
    their edges, the other edges as a build from the store would make them, and its derived
    arrays merged from `graph`'s (`graph.derive_redone`)."""
    gone = np.array(sorted(graph.index[p] for p in removed if p in graph.index), dtype=np.int32)
    into = np.isin(graph.dst, gone)
    weight, reweighted = _reweighted(graph, db, gone, into)
    importers = sorted({graph.paths[int(i)] for i in graph.src[into & (graph.edge_name < 0)]}
                       - removed)
    out = with_paths(FileGraph(graph.paths, graph.index, graph.src, graph.dst, weight,
                               graph.edge_name, graph.names, graph.shapes), set(), removed)
    # An import of a removed file names the next of its candidates that exists, if any.
    src: list[int] = []
    dst: list[int] = []
    for path, module in rows_for(db, "SELECT path, module FROM imports WHERE path IN ({})",
                                 importers):
        before = _resolved(graph, str(module), str(path))
        if before in removed and (now := _resolved(out, str(module), str(path))) is not None:
            src.append(out.index[str(path)])
            dst.append(out.index[now])
    out.src = np.concatenate([out.src, np.array(src, dtype=np.int32)])
    out.dst = np.concatenate([out.dst, np.array(dst, dtype=np.int32)])
    out.weight = np.concatenate([out.weight, np.ones(len(src))])
    out.edge_name = np.concatenate([out.edge_name, np.full(len(src), -1, dtype=np.int32)])
    if graph.walk is not None:
        redone = sorted({out.index[graph.paths[i]] for i in reweighted} | set(src))
        derive_redone(carried(graph, out), out, np.ones(len(out.src) - len(src), dtype=bool),
                      np.array(redone, dtype=np.int32))
    return out


def _reweighted(graph: FileGraph, db: sqlite3.Connection, gone: NDArray[np.int32],
                into: NDArray[np.bool_]) -> tuple[NDArray[np.float64], set[int]]:
    """The edge weights with each name a removed file defined divided among its definers
    now, and the files whose edges those are (kept ones). Whoever refers to such a name has
    an edge to each removed definer, so those edges tell the names and how many definers
    each lost."""
    named = into & (graph.edge_name >= 0)
    lost: dict[int, int] = defaultdict(int)
    for name_id, _dst in {(int(n), int(d)) for n, d in zip(graph.edge_name[named],
                                                             graph.dst[named], strict=True)}:
        lost[name_id] += 1
    if not lost:
        return graph.weight, set()
    name_of = {v: k for k, v in graph.names.items()}
    definers = files_defining(db, {name_of[i] for i in lost})
    weight = graph.weight.copy()
    touched: set[int] = set()
    for name_id, fewer in lost.items():
        name = name_of[name_id]
        now = len(definers.get(name, ()))
        edges = graph.edges_named([name_id])
        edges = edges[~np.isin(graph.dst[edges], gone)]
        if now == 0 or not len(edges):
            continue
        # The reference count behind each weight, recovered exactly (weights are square
        # roots of small integers over small integers), then weighted as a build would
        # (`name_weight` in numpy: the same correctly rounded operations, so the same bits).
        counts = np.rint((weight[edges] / name_weight(name, now + fewer, 1.0)) ** 2)
        now_weight = np.sqrt(counts) / now
        weight[edges] = now_weight * 0.1 if discounted(name, now) else now_weight
        touched.update(int(i) for i in np.unique(graph.src[edges]))
    return weight, touched - set(gone.tolist())


def _resolved(graph: FileGraph, module: str, importer: str) -> str | None:
    """The file of `graph` an import of `module` in `importer` names (as a build resolves it)."""
    for candidate in module_candidates(module, importer):
        if candidate in graph.index and candidate != importer:
            return candidate
    return None
