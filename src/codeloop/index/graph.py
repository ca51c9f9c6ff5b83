"""The file graph (who references or imports whom): built from the store, kept up to date
across edits, and the arrays the walk of `pagerank.py` uses.

numpy and scipy.sparse (both already required by bm25s), not pure Python: ~275k edges on
sympy.
"""

from __future__ import annotations

import hashlib
import math
import posixpath
import sqlite3
from array import array
from collections import defaultdict
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy import sparse

# A name defined in many files (`__init__`, `get`) says little about which one is meant.
_COMMON_NAME_FILES = 5


# File, name and edge numbers: 32 bits halve the graph's integer arrays (sympy's ~275k
# edges, 161k pairs: ~6 MB less per graph, twice that while an update holds the old one).
Ids = NDArray[np.int32]


def _ids(values: NDArray[Any]) -> Ids:
    return values.astype(np.int32)


@dataclass
class FileGraph:
    paths: list[str]
    index: dict[str, int]
    src: Ids
    dst: Ids
    weight: NDArray[np.float64]
    edge_name: Ids  # -1 for import edges
    names: dict[str, int] = field(default_factory=dict)
    # Per file (in `paths` order), a digest of the names it defines: what decides whether
    # an edited file's edges can be redone alone (see `with_file_edges`).
    shapes: list[str] = field(default_factory=list)
    # The same edges summed per (src, dst) pair: what the power iteration walks.
    pair_src: Ids = field(default_factory=lambda: np.zeros(0, dtype=np.int32))
    pair_dst: Ids = field(default_factory=lambda: np.zeros(0, dtype=np.int32))
    pair_weight: NDArray[np.float64] = field(default_factory=lambda: np.zeros(0))
    # Per query only the boosted edges change, so these are built once: the summed pairs as
    # a sparse (dst, src) matrix, each file's outgoing weight, and the edges grouped by name.
    walk: sparse.csr_matrix | None = None
    out_weight: NDArray[np.float64] = field(default_factory=lambda: np.zeros(0))
    by_name: Ids = field(default_factory=lambda: np.zeros(0, dtype=np.int32))
    name_starts: Ids = field(default_factory=lambda: np.zeros(1, dtype=np.int32))

    def edges_named(self, name_ids: list[int]) -> Ids:
        """The indices of the edges whose referenced name is one of `name_ids`."""
        parts = [self.by_name[self.name_starts[i]:self.name_starts[i + 1]] for i in name_ids]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int32)


def module_candidates(module: str, importer: str) -> list[str]:
    """Paths a Python or JS import may name; the graph keeps only the ones that exist."""
    if module.startswith("."):
        base = importer.rsplit("/", 1)[0] if "/" in importer else ""
        if "/" in module or module.startswith("./") or module.startswith("../"):
            parts = (base + "/" + module).split("/") if base else module.split("/")
            out: list[str] = []
            for part in parts:
                if part == "..":
                    if out:
                        out.pop()
                elif part not in ("", "."):
                    out.append(part)
            stem = "/".join(out)
            return [stem + ext for ext in ("", ".js", ".ts", ".tsx", "/index.js", "/index.ts")]
        dots = len(module) - len(module.lstrip("."))
        pkg = base.split("/") if base else []
        pkg = pkg[: len(pkg) - (dots - 1)] if dots > 1 else pkg
        rest = module[dots:].replace(".", "/")
        stem = "/".join([*pkg, rest]) if rest else "/".join(pkg)
    else:
        stem = module.replace(".", "/")
    return [stem + ".py", stem + "/__init__.py"]


def name_weight(name: str, definers: int, count: float) -> float:
    """The weight of an edge for a name referenced `count` times and defined in `definers`
    files (one edge to each)."""
    w = math.sqrt(count) / definers
    if discounted(name, definers):
        w *= 0.1
    return w


def discounted(name: str, definers: int) -> bool:
    """Whether a name's edges weigh a tenth: defined in many files, or private."""
    return definers > _COMMON_NAME_FILES or name.startswith("_")


class _Edges:
    """Edges collected in compact arrays (~300k on sympy: 10 MB here, ~40 MB as lists)."""

    def __init__(self) -> None:
        self.src, self.dst, self.name = array("q"), array("q"), array("q")
        self.weight = array("d")

    def add(self, src: int, dst: int, weight: float, name: int) -> None:
        self.src.append(src)
        self.dst.append(dst)
        self.weight.append(weight)
        self.name.append(name)

    def add_refs(self, path: str, name: str, count: int, graph: FileGraph,
                 definers: dict[str, list[str]]) -> None:
        """Edges from `path` to the files defining `name` (`definers[name]`), which it
        references `count` times."""
        targets = definers.get(name)
        if not targets or path not in graph.index:
            return
        w = name_weight(name, len(targets), count)
        name_id = graph.names.setdefault(name, len(graph.names))
        for target in targets:
            if target != path and target in graph.index:
                self.add(graph.index[path], graph.index[target], w, name_id)

    def add_import(self, path: str, module: str, graph: FileGraph) -> None:
        if path not in graph.index:
            return
        for candidate in module_candidates(module, path):
            if candidate in graph.index and candidate != path:
                self.add(graph.index[path], graph.index[candidate], 1.0, -1)
                return

    def arrays(self) -> tuple[Ids, Ids, NDArray[np.float64], Ids]:
        return (_ids(np.frombuffer(self.src, dtype=np.int64)),
                _ids(np.frombuffer(self.dst, dtype=np.int64)),
                np.frombuffer(self.weight, dtype=np.float64),
                _ids(np.frombuffer(self.name, dtype=np.int64)))


def build_graph(db: sqlite3.Connection) -> FileGraph:
    paths = [str(r[0]) for r in db.execute("SELECT path FROM files WHERE indexed=1 ORDER BY path")]
    defined_in: dict[str, list[str]] = defaultdict(list)
    for name, path in db.execute("SELECT DISTINCT name, path FROM defs"):
        defined_in[str(name)].append(str(path))
    empty = np.zeros(0, dtype=np.int32)
    # Every name's files are needed only while building: later edits ask the store for
    # the names they reference (`with_file_edges`), and not keeping them spares ~7 MB.
    graph = FileGraph(paths, {p: i for i, p in enumerate(paths)}, empty, empty,
                      np.zeros(0), empty, {}, _shapes(paths, defined_in))
    edges = _Edges()
    for path, name, count in db.execute("SELECT path, name, COUNT(*) FROM refs "
                                        "GROUP BY path, name"):
        edges.add_refs(str(path), str(name), int(count), graph, defined_in)
    for path, module in db.execute("SELECT path, module FROM imports"):
        edges.add_import(str(path), str(module), graph)
    graph.src, graph.dst, graph.weight, graph.edge_name = edges.arrays()
    _derive(graph)
    return graph


def with_file_edges(graph: FileGraph, db: sqlite3.Connection, paths: set[str],
                    added: Collection[str] = ()) -> FileGraph:
    """`graph` with the files `added`, and the outgoing edges and the names of `paths` read
    again from the store, ~50 times cheaper than `build_graph` on sympy. The rest of the
    graph must be the same: `paths` holds the added files, every file referring to a name
    whose definers changed (`files_referring`) and every file whose imports may now name an
    added one (`files_importing`). Removed files are taken out before
    (`graph_removal.without_files`)."""
    if not paths and not added and graph.walk is not None:
        return graph  # a removal alone (`graph_removal`) left nothing to redo
    before = graph
    if added:
        graph = with_paths(graph, set(added), set())
    ids = [graph.index[p] for p in paths if p in graph.index]
    keep = ~np.isin(graph.src, ids)
    out = FileGraph(graph.paths, graph.index, graph.src, graph.dst, graph.weight,
                    graph.edge_name, dict(graph.names), list(graph.shapes))
    for i in ids:
        out.shapes[i] = shape_digest([str(r[0]) for r in db.execute(
            "SELECT name FROM defs WHERE path=?", (graph.paths[i],))])
    refs = {path: [(str(n), int(c)) for n, c in db.execute(
        "SELECT name, COUNT(*) FROM refs WHERE path=? GROUP BY name", (path,))]
        for path in sorted(paths)}
    definers = files_defining(db, {n for rows in refs.values() for n, _ in rows})
    edges = _Edges()
    for path, rows in refs.items():
        for ref, count in rows:
            edges.add_refs(path, ref, count, out, definers)
        for (module,) in db.execute("SELECT module FROM imports WHERE path=?", (path,)):
            edges.add_import(path, str(module), out)
    src, dst, weight, name = edges.arrays()
    out.src = np.concatenate([graph.src[keep], src])
    out.dst = np.concatenate([graph.dst[keep], dst])
    out.weight = np.concatenate([graph.weight[keep], weight])
    out.edge_name = np.concatenate([graph.edge_name[keep], name])
    if before.walk is None:
        _derive(out)  # nothing derived yet
    else:
        derive_redone(carried(before, graph) if added else graph, out, keep,
                      np.array(ids, dtype=np.int32))
    return out


def carried(before: FileGraph, after: FileGraph) -> FileGraph:
    """`after` (`before` with files added or removed by `with_paths`: ids moved in order,
    the edges from or to a removed file gone, the rest in order) with `before`'s derived
    arrays on its ids and edges; the ids keep their order, so the pairs theirs."""
    moved = np.array([after.index.get(p, -1) for p in before.paths], dtype=np.int32)
    out = FileGraph(after.paths, after.index, after.src, after.dst, after.weight,
                    after.edge_name, after.names, after.shapes)
    src, dst = moved[before.pair_src], moved[before.pair_dst]
    present = (src >= 0) & (dst >= 0)
    out.pair_src, out.pair_dst = src[present], dst[present]
    out.pair_weight = before.pair_weight[present]
    out.by_name = before.by_name
    if not bool(present.all()):  # the edges `with_paths` kept, renumbered in their order
        edges = (moved[before.src] >= 0) & (moved[before.dst] >= 0)
        out.by_name = _ids((np.cumsum(edges) - 1)[before.by_name[edges[before.by_name]]])
    return out


def with_paths(graph: FileGraph, added: set[str], removed: set[str]) -> FileGraph:
    """`graph`'s edges over its files and `added` (edgeless for now), in path order, without
    `removed` and any edge from or to them; its derived arrays are left for the caller."""
    paths = sorted({*graph.paths, *added} - removed)
    index = {p: i for i, p in enumerate(paths)}
    moved = np.array([index.get(p, -1) for p in graph.paths], dtype=np.int32)
    src, dst = moved[graph.src], moved[graph.dst]
    keep = (src >= 0) & (dst >= 0)
    shape_of = dict(zip(graph.paths, graph.shapes, strict=True))
    return FileGraph(paths, index, src[keep], dst[keep], graph.weight[keep],
                     graph.edge_name[keep], graph.names, [shape_of.get(p, "") for p in paths])


def references_into(graph: FileGraph, paths: list[str]) -> dict[str, list[tuple[str, str]]]:
    """For each of `paths`, (referring file, name) of each reference edge into it."""
    name_of = {v: k for k, v in graph.names.items()}
    out: dict[str, list[tuple[str, str]]] = {}
    for path in paths:
        hit = (graph.dst == graph.index[path]) & (graph.edge_name >= 0)
        out[path] = [(graph.paths[int(s)], name_of[int(n)])
                     for s, n in zip(graph.src[hit], graph.edge_name[hit], strict=True)]
    return out


_SQL_BATCH = 500  # parameters per query, well under SQLite's limit


def rows_for(db: sqlite3.Connection, sql: str, values: list[str]) -> list[tuple[Any, ...]]:
    """`sql`'s rows for `values` put in its `IN ({})`, a batch at a time."""
    out: list[tuple[Any, ...]] = []
    for i in range(0, len(values), _SQL_BATCH):
        batch = values[i:i + _SQL_BATCH]
        out.extend(db.execute(sql.format(",".join("?" * len(batch))), batch))
    return out


def files_defining(db: sqlite3.Connection, names: set[str]) -> dict[str, list[str]]:
    """The files defining each of `names` that some file defines."""
    out: dict[str, list[str]] = defaultdict(list)
    for name, path in rows_for(db, "SELECT DISTINCT name, path FROM defs WHERE name IN ({})",
                               sorted(names)):
        out[str(name)].append(str(path))
    return dict(out)


def names_defined(db: sqlite3.Connection, paths: list[str]) -> set[str]:
    """The names `paths` define."""
    return {str(r[1]) for r in rows_for(db, "SELECT path, name FROM defs WHERE path IN ({})",
                                        sorted(paths))}


def files_referring(db: sqlite3.Connection, names: set[str]) -> set[str]:
    """The files referring to any of `names`."""
    return {str(r[0]) for r in rows_for(db, "SELECT DISTINCT path FROM refs WHERE name IN ({})",
                                        sorted(names))}


def files_importing(db: sqlite3.Connection, paths: set[str]) -> set[str]:
    """The files with an import that may name one of `paths` (a superset: any import ending
    in the file's name or stem, or its folder's for a package's `__init__` or `index`)."""
    out: set[str] = set()
    for path in paths:
        folder, name = posixpath.split(path)
        stem = posixpath.splitext(name)[0]
        if stem in ("__init__", "index") and folder:
            stem = posixpath.basename(folder)
        out.update(str(r[0]) for r in db.execute(
            "SELECT DISTINCT path FROM imports WHERE module LIKE ? ESCAPE '\\' "
            "OR module LIKE ? ESCAPE '\\'", (_ending(stem), _ending(name))))
    return out


def _ending(text: str) -> str:
    """A LIKE pattern for strings ending in `text`."""
    return "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def shape_digest(names: list[str]) -> str:
    """A digest of the distinct names a file defines."""
    return hashlib.blake2b("\0".join(sorted(set(names))).encode(), digest_size=8).hexdigest()


def _shapes(paths: list[str], defined_in: dict[str, list[str]]) -> list[str]:
    by_path: dict[str, list[str]] = defaultdict(list)
    for name, files in defined_in.items():
        for path in files:
            by_path[path].append(name)
    return [shape_digest(by_path.get(p, [])) for p in paths]


def _derive(graph: FileGraph) -> None:
    """What the power iteration and the name lookups use, from the edges."""
    n = max(1, len(graph.paths))
    pair = graph.src.astype(np.int64) * n + graph.dst  # past 46k files n² overflows 32 bits
    unique, inverse = np.unique(pair, return_inverse=True)
    graph.pair_src, graph.pair_dst = _ids(unique // n), _ids(unique % n)
    graph.pair_weight = np.bincount(inverse, weights=graph.weight,
                                    minlength=len(unique)).astype(np.float64)
    graph.by_name = _ids(np.argsort(graph.edge_name, kind="stable"))
    graph.name_starts = _ids(np.searchsorted(graph.edge_name[graph.by_name],
                                             np.arange(len(graph.names) + 1)))
    derive_walk(graph)


def derive_redone(old: FileGraph, out: FileGraph, keep: NDArray[np.bool_],
                  redone: Ids) -> None:
    """`_derive(out)`, to the bit, from `old`'s derived arrays (on `out`'s ids): `out`'s
    edges are `old`'s where `keep`, then new ones; every edge whose weight changed or that
    is new comes from a `redone` file. Only the redone files' pairs are summed again and
    only the new edges sorted by name, not all (~24 -> ~8 ms on sympy, every turn after an
    edit)."""
    n = max(1, len(out.paths))
    new = slice(int(keep.sum()), len(out.src))
    redoing = np.zeros(n, dtype=bool)
    redoing[redone] = True
    # The pairs stay in order of their codes; a redone file's are summed again, from its
    # edges in their order (as `_derive` sums them).
    kept = ~redoing[old.pair_src]
    codes = old.pair_src[kept].astype(np.int64) * n + old.pair_dst[kept]
    mine = redoing[out.src]
    unique, inverse = np.unique(out.src[mine].astype(np.int64) * n + out.dst[mine],
                                return_inverse=True)
    weights = np.bincount(inverse, weights=out.weight[mine], minlength=len(unique))
    at = np.searchsorted(codes, unique)
    out.pair_src = _ids(np.insert(old.pair_src[kept], at, unique // n))
    out.pair_dst = _ids(np.insert(old.pair_dst[kept], at, unique % n))
    out.pair_weight = np.insert(old.pair_weight[kept], at, weights).astype(np.float64)
    # By name, stably: the kept edges in their old order (renumbered), each new one after
    # the kept ones of its name and in its own order.
    moved = np.cumsum(keep) - 1
    by_name = moved[old.by_name[keep[old.by_name]]]
    order = np.argsort(out.edge_name[new], kind="stable")
    places = np.searchsorted(out.edge_name[by_name], out.edge_name[new][order], side="right")
    out.by_name = _ids(np.insert(by_name, places, order + new.start))
    out.name_starts = _ids(np.searchsorted(out.edge_name[out.by_name],
                                           np.arange(len(out.names) + 1)))
    derive_walk(out)


def derive_walk(graph: FileGraph) -> None:
    """The walk matrix and out weights, from the summed pairs."""
    n = max(1, len(graph.paths))
    graph.walk = sparse.csr_matrix((graph.pair_weight, (graph.pair_dst, graph.pair_src)),
                                   shape=(n, n))
    graph.out_weight = np.bincount(graph.pair_src, weights=graph.pair_weight,
                                   minlength=n).astype(np.float64)
