"""The file graph kept in the index's store (see `saved`), so a warm open does not build it
again (~0.7 s of CPU on sympy, most of the first task context's time).

A saved graph records the files it was made from (path and content hash) and a digest of
the names each defines. It is used when those are the files indexed now; otherwise with
the files added, removed or changed since brought in and the edges they affect redone
(`with_file_edges`, as after edits in a session; `derived`), unless those are too many.
A blob that does not check out is built again (and saved).
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from codeloop.index import saved
from codeloop.index.graph import FileGraph, derive_walk, rows_for, shape_digest

NAME = "file_graph"
# Bump when `build_graph` makes other edges or weights: a graph saved before is then rebuilt.
GRAPH_VERSION = 1
KEY = f"file-graph-v{GRAPH_VERSION}"
_EDGE_ARRAYS = ("src", "dst", "weight", "edge_name", "by_name")
_PAIR_ARRAYS = ("pair_src", "pair_dst", "pair_weight")


def indexed_files(db: sqlite3.Connection) -> list[tuple[str, str]]:
    """(path, content hash) of every indexed file, in the graph's order."""
    return [(str(p), str(h)) for p, h in
            db.execute("SELECT path, hash FROM files WHERE indexed=1 ORDER BY path")]


def save_graph(db: sqlite3.Connection, graph: FileGraph, files: list[tuple[str, str]]) -> bool:
    """Save `graph`, made from `files` (`indexed_files` when it was built or brought up to
    date); False when it was not saved."""
    if [p for p, _ in files] != graph.paths or len(graph.shapes) != len(graph.paths):
        return False
    names = [""] * len(graph.names)
    for name, i in graph.names.items():
        names[i] = name
    arrays: dict[str, tuple[str, NDArray[Any]]] = {
        "src": ("i4", graph.src), "dst": ("i4", graph.dst), "weight": ("f8", graph.weight),
        "edge_name": ("i4", graph.edge_name), "by_name": ("i4", graph.by_name),
        "name_starts": ("i4", graph.name_starts), "pair_src": ("i4", graph.pair_src),
        "pair_dst": ("i4", graph.pair_dst), "pair_weight": ("f8", graph.pair_weight)}
    data = {"paths": graph.paths, "hashes": [h for _, h in files], "shapes": graph.shapes,
            "names": names}
    return saved.save(db, NAME, KEY, arrays, data)


@dataclass(frozen=True)
class Stale:
    """How the indexed files differ from those a graph was made from: `changed` files
    define the same names, `reshaped` ones others (those they define now); `added` and
    `removed` files."""

    changed: list[str]
    reshaped: dict[str, set[str]]
    added: list[str]
    removed: list[str]

    def __bool__(self) -> bool:
        return bool(self.changed or self.reshaped or self.added or self.removed)


def load_graph(db: sqlite3.Connection, files: list[tuple[str, str]]
               ) -> tuple[FileGraph, Stale] | None:
    """The saved graph and how `files` (`indexed_files`) differ from the files it was made
    from (its edges to redo); None when there is none that fits."""
    found = saved.load(db, NAME)
    if found is None or found.key != KEY:
        return None
    data = found.data
    paths, hashes = saved.str_list(data.get("paths")), saved.str_list(data.get("hashes"))
    shapes, names = saved.str_list(data.get("shapes")), saved.str_list(data.get("names"))
    if paths is None or hashes is None or shapes is None or names is None:
        return None
    if not len(hashes) == len(shapes) == len(paths) or paths != sorted(set(paths)):
        return None
    position = {p: i for i, p in enumerate(paths)}
    now = dict(files)
    changed = [p for p, h in zip(paths, hashes, strict=True) if p in now and now[p] != h]
    defined: dict[str, list[str]] = {p: [] for p in changed}
    for path, name in rows_for(db, "SELECT path, name FROM defs WHERE path IN ({})", changed):
        defined[str(path)].append(str(name))
    reshaped = {p: set(defined[p]) for p in changed
                if shape_digest(defined[p]) != shapes[position[p]]}
    graph = _assemble(found.arrays, paths, position, names)
    if graph is None:
        return None
    graph.shapes = shapes
    return graph, Stale([p for p in changed if p not in reshaped], reshaped,
                        [p for p, _ in files if p not in position],
                        [p for p in paths if p not in now])


def _in_order(arrays: dict[str, NDArray[Any]], n: int) -> bool:
    """Whether the pairs are in order of (source, target), each once, and the edges by name
    grouped: what updating the graph after an edit builds on (`graph._derive_redone`)."""
    codes = arrays["pair_src"].astype(np.int64) * max(1, n) + arrays["pair_dst"]
    by_name = arrays["edge_name"][arrays["by_name"]]
    return bool(np.all(np.diff(codes) > 0)) and bool(np.all(np.diff(by_name) >= 0))


def _assemble(arrays: dict[str, NDArray[Any]], paths: list[str], position: dict[str, int],
              names: list[str]) -> FileGraph | None:
    """The graph from saved arrays, if they fit together (lengths, index ranges, order)."""
    if any(k not in arrays for k in (*_EDGE_ARRAYS, *_PAIR_ARRAYS, "name_starts")):
        return None
    n, edges, pairs = len(paths), len(arrays["src"]), len(arrays["pair_src"])
    name_ids = {name: i for i, name in enumerate(names)}
    starts = arrays["name_starts"]
    if (len(name_ids) != len(names) or any(len(arrays[k]) != edges for k in _EDGE_ARRAYS)
            or any(len(arrays[k]) != pairs for k in _PAIR_ARRAYS)
            or len(starts) != len(names) + 1):
        return None
    if not (saved.int_range(arrays["src"], 0, n) and saved.int_range(arrays["dst"], 0, n)
            and saved.int_range(arrays["pair_src"], 0, n)
            and saved.int_range(arrays["pair_dst"], 0, n)
            and saved.int_range(arrays["edge_name"], -1, len(names))
            and saved.int_range(arrays["by_name"], 0, edges)
            and saved.int_range(starts, 0, edges + 1) and bool(np.all(np.diff(starts) >= 0))
            and bool(np.all(np.isfinite(arrays["weight"])))
            and bool(np.all(np.isfinite(arrays["pair_weight"])))
            and _in_order(arrays, n)):
        return None
    graph = FileGraph(paths, position, arrays["src"].astype(np.int32),
                      arrays["dst"].astype(np.int32), arrays["weight"],
                      arrays["edge_name"].astype(np.int32), name_ids)
    graph.pair_src = arrays["pair_src"].astype(np.int32)
    graph.pair_dst = arrays["pair_dst"].astype(np.int32)
    graph.pair_weight = arrays["pair_weight"]
    graph.by_name = arrays["by_name"].astype(np.int32)
    graph.name_starts = starts.astype(np.int32)
    derive_walk(graph)
    return graph
