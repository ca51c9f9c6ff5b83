"""A BM25 index's vocabulary saved sorted, so an open maps it instead of parsing it.

bm25s keeps the vocabulary (term -> column) as a JSON object; reading it back built a dict
of every term (118k on sympy: ~45 ms of CPU per index, at every warm open). Saved here as
the terms' UTF-8 bytes in sorted order, their offsets and their columns (three `.npy`
arrays, memory-mapped on load), a search looks up its few hundred query terms by binary
search; the whole mapping is only built for the rare callers that walk it.
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
# Terms may hold lone surrogates (text decoded from odd file names): kept as they are.
_ERRORS = "surrogatepass"


def _encode(term: str) -> bytes:
    return term.encode("utf-8", _ERRORS)


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


class SortedVocab(Mapping[str, int]):
    """Term -> column over the saved arrays (read-only)."""

    def __init__(self, blob: bytes, offsets: NDArray[np.int64], columns: NDArray[np.int64]
                 ) -> None:
        self._blob, self._offsets, self._columns = blob, offsets, columns
        self.lookups = 0  # tests read it: terms looked up by binary search

    @classmethod
    def load(cls, directory: Path) -> SortedVocab | None:
        """The saved vocabulary, or None when there is none or it does not add up."""
        try:
            terms = np.load(directory / TERMS_FILE, mmap_mode="r", allow_pickle=False)
            offsets = np.load(directory / OFFSETS_FILE, mmap_mode="r", allow_pickle=False)
            columns = np.load(directory / COLUMNS_FILE, mmap_mode="r", allow_pickle=False)
        except (OSError, ValueError):
            return None
        if (terms.dtype != np.uint8 or offsets.dtype != np.int64 or columns.dtype != np.int64
                or terms.ndim != 1 or offsets.ndim != 1 or columns.ndim != 1
                or len(offsets) != len(columns) + 1 or int(offsets[0]) != 0
                or int(offsets[-1]) != len(terms) or bool(np.any(np.diff(offsets) < 0))):
            return None
        return cls(terms.tobytes(), offsets, columns)

    def __len__(self) -> int:
        return len(self._columns)

    def _term_bytes(self, position: int) -> bytes:
        return self._blob[int(self._offsets[position]):int(self._offsets[position + 1])]

    def __getitem__(self, term: str) -> int:
        self.lookups += 1
        key = _encode(term)
        position = bisect.bisect_left(_Terms(self), key)
        if position < len(self) and self._term_bytes(position) == key:
            return int(self._columns[position])
        raise KeyError(term)

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
