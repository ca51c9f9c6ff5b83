"""A BM25 index's vocabulary saved sorted, so an open maps it instead of parsing it.

bm25s keeps the vocabulary (term -> column) as a JSON object; reading it back built a dict
of every term (118k on sympy: ~45 ms of CPU per index, at every warm open). Saved here as
the terms' UTF-8 bytes in sorted order, their offsets, their columns and their first eight
bytes as one number each (four `.npy` arrays, memory-mapped on load), a search looks up
its few hundred query terms at once: numpy finds each term's run of equal first bytes, a
binary search the term within it. The whole mapping is only built for the rare callers
that walk it.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Mapping
from itertools import pairwise
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

TERMS_FILE = "vocab.terms.npy"
OFFSETS_FILE = "vocab.offsets.npy"
COLUMNS_FILE = "vocab.columns.npy"
HEADS_FILE = "vocab.heads.npy"
_HEAD_BYTES = 8
# Terms may hold lone surrogates (text decoded from odd file names): kept as they are.
_ERRORS = "surrogatepass"


def _encode(term: str) -> bytes:
    return term.encode("utf-8", _ERRORS)


def _head(key: bytes) -> int:
    """The first eight bytes as a big-endian number: ordered as the bytes are (no term
    holds a NUL byte, so the zero padding of a short one sorts as the bytes do)."""
    return int.from_bytes(key[:_HEAD_BYTES].ljust(_HEAD_BYTES, b"\0"), "big")


def save_vocab(directory: Path, vocab: Mapping[str, int]) -> None:
    """Write `vocab` sorted by the terms' bytes into `directory` (made by bm25s's save)."""
    encoded = sorted((_encode(term), column) for term, column in vocab.items())
    lengths = np.fromiter((len(b) for b, _ in encoded), dtype=np.int64, count=len(encoded))
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    np.save(directory / TERMS_FILE, np.frombuffer(b"".join(b for b, _ in encoded), dtype=np.uint8))
    np.save(directory / OFFSETS_FILE, offsets)
    np.save(directory / COLUMNS_FILE,
            np.fromiter((c for _, c in encoded), dtype=np.int64, count=len(encoded)))
    np.save(directory / HEADS_FILE,
            np.fromiter((_head(b) for b, _ in encoded), dtype=np.uint64, count=len(encoded)))


class SortedVocab(Mapping[str, int]):
    """Term -> column over the saved arrays (read-only)."""

    def __init__(self, blob: bytes, offsets: NDArray[np.int64], columns: NDArray[np.int64],
                 heads: NDArray[np.uint64]) -> None:
        # Plain arrays over the maps: indexing a `np.memmap` goes through its subclass.
        self._blob, self._offsets = blob, np.asarray(offsets)
        self._columns, self._heads = np.asarray(columns), np.asarray(heads)
        self.lookups = 0  # tests read it: terms looked up here

    @classmethod
    def load(cls, directory: Path) -> SortedVocab | None:
        """The saved vocabulary, or None when there is none or it does not add up."""
        try:
            terms = np.load(directory / TERMS_FILE, mmap_mode="r", allow_pickle=False)
            offsets = np.load(directory / OFFSETS_FILE, mmap_mode="r", allow_pickle=False)
            columns = np.load(directory / COLUMNS_FILE, mmap_mode="r", allow_pickle=False)
            heads = np.load(directory / HEADS_FILE, mmap_mode="r", allow_pickle=False)
        except (OSError, ValueError):
            return None
        if (terms.dtype != np.uint8 or offsets.dtype != np.int64 or columns.dtype != np.int64
                or heads.dtype != np.uint64 or terms.ndim != 1 or offsets.ndim != 1
                or columns.ndim != 1 or heads.ndim != 1 or len(heads) != len(columns)
                or len(offsets) != len(columns) + 1 or int(offsets[0]) != 0
                or int(offsets[-1]) != len(terms) or bool(np.any(np.diff(offsets) < 0))):
            return None
        return cls(terms.tobytes(), offsets, columns, heads)

    def __len__(self) -> int:
        return len(self._columns)

    def _term_bytes(self, position: int) -> bytes:
        return self._blob[int(self._offsets[position]):int(self._offsets[position + 1])]

    def __getitem__(self, term: str) -> int:
        column = self.lookup_many([term])[0]
        if column is None:
            raise KeyError(term)
        return column

    def lookup_many(self, terms: list[str]) -> list[int | None]:
        """Each term's column, None for a term not in the vocabulary."""
        self.lookups += len(terms)
        keys = [_encode(t) for t in terms]
        wanted = np.fromiter((_head(k) for k in keys), dtype=np.uint64, count=len(keys))
        starts = np.searchsorted(self._heads, wanted, side="left").tolist()
        ends = np.searchsorted(self._heads, wanted, side="right").tolist()
        sequence = _Terms(self)
        out: list[int | None] = []
        for key, start, end in zip(keys, starts, ends, strict=True):
            position = bisect.bisect_left(sequence, key, start, end) if end - start > 1 else start
            found = position < end and self._term_bytes(position) == key
            out.append(int(self._columns[position]) if found else None)
        return out

    def __contains__(self, term: object) -> bool:
        if not isinstance(term, str):
            return False
        try:
            self[term]
        except KeyError:
            return False
        return True

    def __iter__(self) -> Iterator[str]:
        return iter(self._decoded())

    def items(self) -> Iterator[tuple[str, int]]:  # type: ignore[override]
        """Every (term, column), in one pass (not a binary search per term)."""
        return zip(self._decoded(), self._columns.tolist(), strict=True)

    def _decoded(self) -> list[str]:
        ends = self._offsets.tolist()
        blob = self._blob
        return [blob[a:b].decode("utf-8", _ERRORS) for a, b in pairwise(ends)]


class _Terms:
    """The sorted terms' bytes as a sequence, for `bisect`."""

    def __init__(self, vocab: SortedVocab) -> None:
        self._vocab = vocab

    def __len__(self) -> int:
        return len(self._vocab)

    def __getitem__(self, position: int) -> bytes:
        return self._vocab._term_bytes(position)
