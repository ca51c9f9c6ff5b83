"""Embeddings of memories when the optional `embeddings` extra is installed and turned on
(model2vec, the same static model and switch the index uses); recall is BM25 alone
without it."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from codeloop.index import embeddings


def available() -> bool:
    return embeddings.available()


def wanted() -> bool:
    """Whether stores should embed: the same switch as the index's (`CODELOOP_EMBEDDINGS`,
    with the extra installed). Loading the model takes seconds, so it is never a surprise."""
    try:
        return embeddings.enabled()
    except embeddings.EmbeddingsUnavailable:
        return False


def ready() -> bool:
    """Whether the model is loaded; if not, it starts loading in the background and a store
    leaves a new memory's vector to its next semantic recall (the backfill) instead of
    making `remember` wait seconds for it."""
    return embeddings.model_ready()


def encode(texts: list[str]) -> NDArray[np.float32]:
    """Unit vectors, one row per text."""
    return embeddings.encode(texts)


def to_blob(vector: NDArray[np.float32]) -> bytes:
    return np.asarray(vector, dtype=np.float32).tobytes()


def from_blob(blob: bytes) -> NDArray[np.float32]:
    return np.frombuffer(blob, dtype=np.float32)


def ranked(query: NDArray[np.float32], rows: list[tuple[int, bytes]],
           limit: int) -> list[tuple[int, float]]:
    """(rowid, cosine) of the rows nearest `query`, best first; rows of another width (a
    model changed since they were stored) are skipped."""
    usable = [(rowid, from_blob(blob)) for rowid, blob in rows]
    usable = [(rowid, v) for rowid, v in usable if v.shape == query.shape]
    if not usable:
        return []
    matrix = np.vstack([v for _, v in usable])
    scores = matrix @ query
    order = np.argsort(-scores, kind="stable")[:limit]
    return [(usable[i][0], float(scores[i])) for i in order]
