"""BM25 over documents (files or chunks): a bm25s base index plus a small live overlay.

bm25s scores fast from a sparse matrix but can only be rebuilt whole (seconds on a large
repository). Changed documents therefore go to an overlay scored here with the same BM25
formula, and their old rows in the base are masked; the base is rebuilt when the overlay
grows past a share of the corpus.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

import bm25s
import numpy as np

K1 = 1.5
B = 0.75
REBUILD_SHARE = 0.05
REBUILD_MIN = 200


class LexicalIndex:
    def __init__(self) -> None:
        self._base: bm25s.BM25 | None = None
        self._base_keys: list[str] = []
        self._base_pos: dict[str, int] = {}
        self._dead = np.zeros(0, dtype=bool)
        self._df: Counter[str] = Counter()
        self._total_len = 0
        self._n_docs = 0
        self._overlay: dict[str, tuple[Counter[str], int]] = {}
        self._base_len: dict[str, int] = {}

    # --- building -----------------------------------------------------------------------

    def build(self, docs: Iterable[tuple[str, list[str]]]) -> None:
        """Replace everything with these documents."""
        keys: list[str] = []
        corpus: list[list[str]] = []
        self._df = Counter()
        self._base_len = {}
        self._total_len = 0
        for key, toks in docs:
            keys.append(key)
            corpus.append(toks)
            self._df.update(set(toks))
            self._base_len[key] = len(toks)
            self._total_len += len(toks)
        self._n_docs = len(keys)
        self._base_keys = keys
        self._base_pos = {k: i for i, k in enumerate(keys)}
        self._dead = np.zeros(len(keys), dtype=bool)
        self._overlay = {}
        if keys:
            model = bm25s.BM25(k1=K1, b=B)
            model.index(corpus, show_progress=False)
            self._base = model
        else:
            self._base = None

    def remove(self, key: str) -> None:
        pos = self._base_pos.get(key)
        if pos is not None and not self._dead[pos]:
            self._dead[pos] = True
            self._forget(self._base_len.get(key, 0), None)
        entry = self._overlay.pop(key, None)
        if entry is not None:
            self._forget(entry[1], entry[0])

    def _forget(self, length: int, counts: Counter[str] | None) -> None:
        self._n_docs -= 1
        self._total_len -= length
        if counts is not None:
            self._df.subtract(counts.keys())

    def add(self, key: str, toks: list[str]) -> None:
        self.remove(key)
        counts = Counter(toks)
        self._overlay[key] = (counts, len(toks))
        self._df.update(counts.keys())
        self._n_docs += 1
        self._total_len += len(toks)

    def needs_rebuild(self) -> bool:
        return len(self._overlay) > max(REBUILD_MIN, REBUILD_SHARE * max(1, len(self._base_keys)))

    def __len__(self) -> int:
        return self._n_docs

    # --- searching ----------------------------------------------------------------------

    def search(self, query: list[str], k: int) -> list[tuple[str, float]]:
        """The best `k` documents for the query terms, best first."""
        if not query or self._n_docs <= 0:
            return []
        hits: list[tuple[str, float]] = []
        if self._base is not None:
            vocab = self._base.vocab_dict
            known = [t for t in query if t in vocab]
            if known:
                scores = np.asarray(self._base.get_scores(known), dtype=np.float64)
                scores[self._dead] = 0.0
                top = min(k, len(scores))
                idx = np.argpartition(-scores, top - 1)[:top] if top < len(scores) else \
                    np.arange(len(scores))
                hits.extend((self._base_keys[i], float(scores[i])) for i in idx if scores[i] > 0)
        hits.extend(self._score_overlay(query))
        hits.sort(key=lambda h: (-h[1], h[0]))
        return hits[:k]

    def _score_overlay(self, query: list[str]) -> list[tuple[str, float]]:
        if not self._overlay:
            return []
        avgdl = self._total_len / max(1, self._n_docs)
        idf = {t: math.log(1 + (self._n_docs - self._df[t] + 0.5) / (self._df[t] + 0.5))
               for t in set(query)}
        out = []
        for key, (counts, length) in self._overlay.items():
            score = 0.0
            for t in query:
                tf = counts.get(t, 0)
                if tf:
                    score += idf[t] * tf * (K1 + 1) / (tf + K1 * (1 - B + B * length / avgdl))
            if score > 0:
                out.append((key, score))
        return out

    # --- persistence --------------------------------------------------------------------

    def save(self, directory: Path) -> None:
        """Save the base index; the overlay is rebuilt from the store on load."""
        directory.mkdir(parents=True, exist_ok=True)
        if self._base is not None:
            self._base.save(str(directory / "bm25"), show_progress=False)
        meta = {"keys": self._base_keys, "df": self._df, "lens": self._base_len}
        (directory / "lexical.json").write_text(json.dumps(meta))

    @classmethod
    def load(cls, directory: Path) -> LexicalIndex | None:
        """The saved index, or None when there is none or it cannot be read."""
        try:
            meta = json.loads((directory / "lexical.json").read_text())
            index = cls()
            index._base_keys = list(meta["keys"])
            index._df = Counter(meta["df"])
            index._base_len = {k: int(v) for k, v in meta["lens"].items()}
            if index._base_keys:
                index._base = bm25s.BM25.load(str(directory / "bm25"), mmap=True)
        except (OSError, ValueError, KeyError):
            return None
        index._base_pos = {k: i for i, k in enumerate(index._base_keys)}
        index._dead = np.zeros(len(index._base_keys), dtype=bool)
        index._n_docs = len(index._base_keys)
        index._total_len = sum(index._base_len.values())
        return index

    def base_keys(self) -> list[str]:
        return list(self._base_keys)
