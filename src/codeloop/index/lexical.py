"""BM25 over documents (files or chunks): a bm25s base index plus a small live overlay.

bm25s scores fast from a sparse matrix but can only be rebuilt whole (seconds on a large
repository). Changed documents therefore go to an overlay scored here with the same BM25
formula, and their old rows in the base are masked; the base is rebuilt when the overlay
grows past a share of the corpus.

A saved index keeps only what a search needs to be read at open (the keys, the documents'
lengths, bm25s's memory-mapped matrix, the vocabulary memory-mapped and sorted: `vocab`); the
document frequencies, which only the overlay uses, are derived from the matrix when the
first document changes (parsing them as JSON was ~0.15 s of each warm open on sympy).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import threading
from array import array
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

import bm25s
import numpy as np
from numpy.typing import NDArray
from scipy import sparse

from codeloop.index.vocab import TERMS_FILE, SortedVocab, save_vocab

K1 = 1.5
B = 0.75
REBUILD_SHARE = 0.05
REBUILD_MIN = 200


class LexicalIndex:
    def __init__(self) -> None:
        self._base: bm25s.BM25 | None = None
        self._base_keys: list[str] = []
        # Key -> base position, made when a document first changes (not at a load).
        self._base_pos: dict[str, int] | None = {}
        self._dead = np.zeros(0, dtype=bool)
        # None until a document changes: then the base's, from its matrix (`_frequencies`).
        self._df: Counter[str] | None = Counter()
        self._total_len = 0
        self._n_docs = 0
        self._overlay: dict[str, tuple[Counter[str], int]] = {}
        self._base_lens = np.zeros(0, dtype=np.int64)  # by base position
        self._terms_by_id: list[str] | None = None
        # Tests read it: how often the frequencies were derived from a loaded matrix.
        self.frequencies_derived = 0

    # --- building -----------------------------------------------------------------------

    def build(self, docs: Iterable[tuple[str, list[str]]]) -> None:
        """Replace everything with these documents."""
        builder = LexicalBuilder()
        for key, toks in docs:
            builder.add(key, toks)
        self.adopt(builder)

    def adopt(self, builder: LexicalBuilder) -> None:
        """Replace everything with the documents `builder` collected (and empty it)."""
        self._install(*builder.finish())

    @classmethod
    def snapshot(cls, builder: LexicalBuilder) -> LexicalIndex:
        """An index of the documents `builder` holds so far; it keeps collecting."""
        index = cls()
        index._install(*builder.model(keep=True))
        return index

    def _install(self, keys: list[str], model: bm25s.BM25 | None, df: Counter[str],
                 lens: list[int]) -> None:
        self._base_keys = keys
        self._base_pos = None
        self._base_lens = np.asarray(lens, dtype=np.int64)
        self._df = df
        self._total_len = sum(lens)
        self._n_docs = len(keys)
        self._dead = np.zeros(len(keys), dtype=bool)
        self._overlay = {}
        self._terms_by_id = None
        self._base = model

    def remove(self, key: str) -> None:
        self.remove_many([key])

    def remove_many(self, keys: Iterable[str]) -> None:
        """Drop these documents. The base documents' terms are read back in one scan of the
        postings for the lot: a scan per document made a checkout moved across hundreds of
        changed files spend most of its index update here."""
        positions = []
        for key in keys:
            pos = self._positions().get(key)
            if pos is not None and not self._dead[pos]:
                self._dead[pos] = True
                positions.append(pos)
            entry = self._overlay.pop(key, None)
            if entry is not None:
                self._forget(entry[1], entry[0].keys())
        terms = self._base_terms(positions)
        for pos in positions:
            self._forget(int(self._base_lens[pos]), terms.get(pos, []))

    def _positions(self) -> dict[str, int]:
        if self._base_pos is None:
            self._base_pos = {k: i for i, k in enumerate(self._base_keys)}
        return self._base_pos

    def _forget(self, length: int, distinct_terms: Iterable[str]) -> None:
        self._n_docs -= 1
        self._total_len -= length
        self._frequencies().subtract(distinct_terms)

    def _frequencies(self) -> Counter[str]:
        """The document frequencies, derived from the base matrix on first use after a load:
        a term's frequency is the number of documents in its column."""
        if self._df is None:
            per_term: list[int] = []
            if self._base is not None:
                per_term = np.diff(np.asarray(self._base.scores["indptr"])).tolist()
            self._df = Counter(dict(zip(self._vocab_by_id(), per_term, strict=True)))
            self.frequencies_derived += 1
        return self._df

    def expand_vocab(self) -> None:
        """Turn a saved vocabulary (bisected: ~5 us a term) into a dict (~0.3 us): after the
        first task context, which does not wait for it (~40 ms of CPU on sympy)."""
        base = self._base
        if base is not None and isinstance(base.vocab_dict, SortedVocab):
            base.vocab_dict = dict(base.vocab_dict.items())

    def _vocab_by_id(self) -> list[str]:
        """The base's terms in id order (the matrix's column order)."""
        if self._terms_by_id is None:
            vocab = self._base.vocab_dict if self._base is not None else {}
            by_id = [""] * len(vocab)
            for term, term_id in vocab.items():
                by_id[term_id] = term
            self._terms_by_id = by_id
        return self._terms_by_id

    def _base_terms(self, positions: list[int]) -> dict[int, list[str]]:
        """The distinct terms of each base document at `positions`, read back from the
        term-major score matrix (one scan of its postings: removals are rare next to
        searches, and keeping a per-document term list would cost memory on every build)."""
        if self._base is None or not positions:
            return {}
        matrix = self._base.scores
        indices = np.asarray(matrix["indices"])
        wanted = np.zeros(len(self._base_keys), dtype=bool)
        wanted[positions] = True
        postings = np.flatnonzero(wanted[indices])
        columns = np.searchsorted(np.asarray(matrix["indptr"]), postings, side="right") - 1
        by_id = self._vocab_by_id()
        out: dict[int, list[str]] = {}
        for doc, column in zip(indices[postings].tolist(), columns.tolist(), strict=True):
            out.setdefault(doc, []).append(by_id[column])
        return out

    def add(self, key: str, toks: list[str]) -> None:
        self.remove(key)
        counts = Counter(toks)
        self._overlay[key] = (counts, len(toks))
        self._frequencies().update(counts.keys())
        self._n_docs += 1
        self._total_len += len(toks)

    def needs_rebuild(self, pending: int = 0) -> bool:
        """Whether the overlay (with `pending` more documents) has outgrown the base."""
        return len(self._overlay) + pending > max(REBUILD_MIN,
                                                  REBUILD_SHARE * max(1, len(self._base_keys)))

    def __len__(self) -> int:
        return self._n_docs

    # --- searching ----------------------------------------------------------------------

    def search(self, query: list[str], k: int) -> list[tuple[str, float]]:
        """The best `k` documents for the query terms, best first."""
        if not query or self._n_docs <= 0:
            return []
        hits: list[tuple[str, float]] = []
        if self._base is not None:
            scores = self._score_base(query)
            if scores is not None:
                scores[self._dead] = 0.0
                top = min(k, len(scores))
                idx = np.argpartition(-scores, top - 1)[:top] if top < len(scores) else \
                    np.arange(len(scores))
                hits.extend((self._base_keys[i], float(scores[i])) for i in idx if scores[i] > 0)
        hits.extend(self._score_overlay(query))
        hits.sort(key=lambda h: (-h[1], h[0]))
        return hits[:k]

    def _score_base(self, query: list[str]) -> NDArray[np.float64] | None:
        """Every base document's score: the sum, over the query's terms (repeats counted),
        of the term's column in bm25s's score matrix — what `BM25.get_scores` computes, in
        one gather and one bincount instead of a slow `np.add.at` per query term."""
        assert self._base is not None
        vocab = self._base.vocab_dict
        found = vocab.lookup_many(query) if isinstance(vocab, SortedVocab) else \
            [vocab.get(t) for t in query]
        repeats = Counter(i for i in found if i is not None)
        if not repeats:
            return None
        matrix = self._base.scores
        indptr = matrix["indptr"]
        ids = np.fromiter(repeats.keys(), dtype=np.int64, count=len(repeats))
        starts = np.asarray(indptr[ids], dtype=np.int64)
        lengths = np.asarray(indptr[ids + 1], dtype=np.int64) - starts
        total = int(lengths.sum())
        # Positions of every posting of every query term, concatenated.
        offsets = np.repeat(starts - (np.cumsum(lengths) - lengths), lengths)
        positions = offsets + np.arange(total, dtype=np.int64)
        weights = np.asarray(matrix["data"][positions], dtype=np.float64)
        weights *= np.repeat(np.fromiter(repeats.values(), dtype=np.float64,
                                         count=len(repeats)), lengths)
        return np.bincount(matrix["indices"][positions], weights=weights,
                           minlength=int(matrix["num_docs"])).astype(np.float64, copy=False)

    def _score_overlay(self, query: list[str]) -> list[tuple[str, float]]:
        if not self._overlay:
            return []
        avgdl = self._total_len / max(1, self._n_docs)
        repeats = Counter(query)  # a term said twice counts twice, as in the base index
        wanted = repeats.keys()
        frequencies = self._frequencies()
        idf: dict[str, float] = {}
        out = []
        for key, (counts, length) in self._overlay.items():
            # Only the terms the document has (a set intersection, in C): an issue text
            # brings hundreds of terms and a document a few dozen.
            common = counts.keys() & wanted
            if not common:
                continue
            norm = K1 * (1 - B + B * length / avgdl)
            score = 0.0
            for t in sorted(common):  # a fixed order: the same sum on every run
                weight = idf.get(t)
                if weight is None:
                    df = frequencies[t]
                    weight = idf[t] = math.log(1 + (self._n_docs - df + 0.5) / (df + 0.5))
                tf = counts[t]
                # The base's formula (bm25s "lucene": no (k1+1) factor), so a document
                # scores alike before and after it moves to the overlay.
                score += repeats[t] * weight * tf / (tf + norm)
            if score > 0:
                out.append((key, score))
        return out

    # --- persistence --------------------------------------------------------------------

    def save(self, directory: Path) -> None:
        """Save the base index (called right after a build: no overlay, nothing masked); the
        overlay is rebuilt from the store on load.

        Written whole into a new directory that then replaces `directory`: no file of a saved
        index is ever written again, so a view's index may hard-link its seed's (`registry`),
        and a crash mid-save leaves the old index, not half of each."""
        suffix = f"{os.getpid()}.{threading.get_ident()}"
        fresh = directory.with_name(f".{directory.name}.new.{suffix}")
        old = directory.with_name(f".{directory.name}.old.{suffix}")
        shutil.rmtree(fresh, ignore_errors=True)
        fresh.mkdir(parents=True)
        try:
            if self._base is not None:
                self._base.save(str(fresh / "bm25"), show_progress=False)
                save_vocab(fresh / "bm25", self._base.vocab_dict)
            meta = {"keys": self._base_keys, "lengths": self._base_lens.tolist()}
            (fresh / "lexical.json").write_text(json.dumps(meta))
            if directory.is_dir():
                directory.rename(old)
            fresh.rename(directory)
        finally:
            shutil.rmtree(fresh, ignore_errors=True)
            shutil.rmtree(old, ignore_errors=True)

    @classmethod
    def load(cls, directory: Path) -> LexicalIndex | None:
        """The saved index, or None when there is none or it cannot be read."""
        try:
            meta = json.loads((directory / "lexical.json").read_text())
            index = cls()
            index._base_keys = [str(k) for k in meta["keys"]]
            if "lengths" in meta:
                lengths = [int(n) for n in meta["lengths"]]
            else:  # saved before the lengths were a list: by key, with the frequencies
                lengths = [int(meta["lens"][k]) for k in index._base_keys]
            if len(lengths) != len(index._base_keys):
                return None
            index._base_lens = np.asarray(lengths, dtype=np.int64)
            if index._base_keys:
                vocab = SortedVocab.load(directory / "bm25")
                index._base = bm25s.BM25.load(str(directory / "bm25"), mmap=True,
                                              load_vocab=vocab is None)
                if vocab is not None:
                    index._base.vocab_dict = vocab
        except (OSError, ValueError, KeyError, TypeError):
            return None
        index._df = None
        index._base_pos = None
        index._dead = np.zeros(len(index._base_keys), dtype=bool)
        index._n_docs = len(index._base_keys)
        index._total_len = int(index._base_lens.sum())
        return index

    @classmethod
    def upgrade_saved(cls, directory: Path) -> bool:
        """Save again, in the current layout, an index saved in an earlier one (frequencies
        in its JSON, no sorted vocabulary: it loads, but as slowly as before); True if it
        did. Once per index directory: a repository's index made before is only read."""
        if not (directory / "bm25").is_dir() or (directory / "bm25" / TERMS_FILE).is_file():
            return False
        index = cls.load(directory)
        if index is None:
            return False
        index.save(directory)
        return True

    def base_keys(self) -> list[str]:
        return list(self._base_keys)


class LexicalBuilder:
    """Collects documents one at a time for a bm25s base index, in compact arrays.

    `bm25s.BM25.index` wants every document's term list at once, and its own intermediate
    lists of term ids: on sympy (~50k chunks) that was the peak of a cold build (~150 MB).
    Here each document is reduced on arrival to its distinct term ids and counts (int32
    arrays), and the score matrix is computed with numpy in one pass, with the formula
    bm25s uses for its default "lucene" method, so the result is bm25s's index.
    """

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self._vocab: dict[str, int] = {}
        self._keys: list[str] = []
        self._ids = array("i")
        self._tfs = array("i")
        self._lens = array("i")
        self._ends = array("q", [0])  # where each document's ids end in `_ids`

    def add(self, key: str, toks: list[str]) -> None:
        counts = Counter(toks)
        vocab = self._vocab
        # setdefault's default is evaluated first: a new term gets the next id.
        self._ids.extend(vocab.setdefault(t, len(vocab)) for t in counts)
        self._tfs.extend(counts.values())
        self._lens.append(len(toks))
        self._ends.append(len(self._ids))
        self._keys.append(key)

    def __len__(self) -> int:
        return len(self._keys)

    def finish(self) -> tuple[list[str], bm25s.BM25 | None, Counter[str], list[int]]:
        """(keys, model or None when empty, document frequencies, lengths); empties self."""
        return self.model(keep=False)

    def model(self, keep: bool) -> tuple[list[str], bm25s.BM25 | None, Counter[str], list[int]]:
        """What `finish` returns; with `keep` the documents stay (copied out: a build in
        progress searched before it ends), else self is emptied."""
        keys, vocab, lens = self._keys, self._vocab, self._lens.tolist()
        if keep:
            keys, vocab = list(keys), dict(vocab)
            ids = np.array(self._ids, dtype=np.int32)
            tfs = np.array(self._tfs, dtype=np.float32)
            ends = np.array(self._ends, dtype=np.int64)
        else:
            ids = np.frombuffer(self._ids, dtype=np.int32)
            tfs = np.frombuffer(self._tfs, dtype=np.int32).astype(np.float32)
            ends = np.frombuffer(self._ends, dtype=np.int64)
            self._reset()
        df_array = np.bincount(ids, minlength=len(vocab))
        df = Counter(dict(zip(vocab, df_array.tolist(), strict=True)))
        if not keys:
            return keys, None, df, lens
        n = len(keys)
        doc_len = np.asarray(lens, dtype=np.float32)
        avgdl = float(doc_len.mean()) or 1.0
        idf = np.log1p((n - df_array + 0.5) / (df_array + 0.5)).astype(np.float32)
        norm = np.repeat(K1 * (1 - B + B * doc_len / avgdl), np.diff(ends))
        tfs = idf[ids] * tfs / (tfs + norm)
        del norm
        # Rows are documents as collected; bm25s stores one column per term (CSC).
        matrix = sparse.csr_matrix((tfs, ids, ends), shape=(n, len(vocab))).tocsc()
        model = bm25s.BM25(k1=K1, b=B)
        model.scores = {"data": matrix.data, "indices": matrix.indices,
                        "indptr": matrix.indptr, "num_docs": n}
        model.vocab_dict = vocab
        model.nonoccurrence_array = None  # only the bm25l and bm25+ methods use one
        return keys, model, df, lens
