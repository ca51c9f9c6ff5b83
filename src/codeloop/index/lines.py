"""Files read for the index's answers: their lines, split only where asked, and the
recently read ones kept by content hash and stat.

The context builder and the tools show a few dozen lines of files thousands of lines long,
for one query after another. A file's lines are found by one vectorised scan for line
breaks, and only the lines asked for are decoded (`FileLines`). A file whose stat (inode,
size, modification and change times) is the one recorded when it was hashed is not read
again: the kernel sets the change time on every write, and a stat is only trusted once its
change time is a second older than the read (a write within the same clock tick would leave
the stat as it was: git's "racy clean" rule).
"""

from __future__ import annotations

import os
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from typing import overload

import numpy as np
from numpy.typing import NDArray

from codeloop.index.analyse import decode

# Bytes of recently read files kept (with their line offsets, ~20% more). A session reads
# the same few dozen files again and again; `index_speed.py` on sympy, whose queries read
# files all over the repository, peaked at 284-287 MB with 16 MB here and 275-277 MB with
# 8 MB (goal < 300 MB), its context build p95 3-4 ms slower (re-reads).
RECENT_BYTES = 8_000_000
_RACY_NS = 1_000_000_000
# Besides "\n", what `str.splitlines` breaks lines at, in ASCII; the rest is not ASCII.
_OTHER_BREAKS = (b"\r", b"\x0b", b"\x0c", b"\x1c", b"\x1d", b"\x1e")

StatKey = tuple[int, int, int, int]


class FileLines(Sequence[str]):
    """A file's lines exactly as `decode(data).splitlines()` gives them, decoded on access.
    An ASCII file that breaks lines only at "\n" is split by offsets; any other is split
    whole at once."""

    __slots__ = ("_data", "_ends", "_lines", "_starts")

    def __init__(self, data: bytes) -> None:
        self._data = data
        self._lines: list[str] | None = None
        self._starts: NDArray[np.int32] = np.zeros(0, dtype=np.int32)
        self._ends: NDArray[np.int32] = self._starts
        if not data.isascii() or any(b in data for b in _OTHER_BREAKS):
            self._lines = decode(data).splitlines()
            return
        breaks = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == 10).astype(np.int32)
        starts = np.concatenate((np.zeros(1, dtype=np.int32), breaks + 1))
        if data.endswith(b"\n") or not data:
            starts = starts[:-1]  # a final break ends the last line; it starts none
        self._starts = starts
        self._ends = np.append(breaks, np.int32(len(data)))[:len(starts)].astype(np.int32)

    def __len__(self) -> int:
        return len(self._lines) if self._lines is not None else len(self._starts)

    def __eq__(self, other: object) -> bool:
        """Equal to a list (or other `FileLines`) of the same lines."""
        if isinstance(other, FileLines | list):
            return len(self) == len(other) and list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # equal to lists, so unhashable like them

    @overload
    def __getitem__(self, at: int) -> str: ...

    @overload
    def __getitem__(self, at: slice) -> list[str]: ...

    def __getitem__(self, at: int | slice) -> str | list[str]:
        if self._lines is not None:
            return self._lines[at]
        if isinstance(at, slice):
            first, stop, step = at.indices(len(self._starts))
            if step != 1:
                return [self[i] for i in range(first, stop, step)]
            if first >= stop:
                return []
            span = self._data[self._starts[first]:self._ends[stop - 1]]
            return span.decode("ascii").split("\n")
        if at < 0:
            at += len(self._starts)
        if not 0 <= at < len(self._starts):
            raise IndexError(at)
        return self._data[self._starts[at]:self._ends[at]].decode("ascii")

    @property
    def size(self) -> int:
        """Bytes held: the content and its offsets."""
        return len(self._data) + 8 * len(self._starts)


def stat_key(st: os.stat_result) -> StatKey | None:
    """What identifies this version of a file, or None when it changed too recently."""
    if time.time_ns() - st.st_ctime_ns < _RACY_NS:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


class RecentLines:
    def __init__(self, capacity: int = RECENT_BYTES) -> None:
        self.capacity = capacity
        self._lock = threading.Lock()
        self._files: OrderedDict[str, tuple[str, FileLines, StatKey | None]] = OrderedDict()
        self._size = 0

    def known(self, rel: str, key: StatKey | None) -> tuple[str, FileLines] | None:
        """(hash, lines) of `rel` if it was read with this very stat, else None."""
        if key is None:
            return None
        with self._lock:
            cached = self._files.get(rel)
            if cached is None or cached[2] != key:
                return None
            self._files.move_to_end(rel)
            return cached[0], cached[1]

    def split(self, rel: str, digest: str, data: bytes, key: StatKey | None = None
              ) -> FileLines:
        """`data`'s lines, reused when `rel` was read with the same hash recently; `key` is
        the stat taken before `data` was read (None: not to be trusted)."""
        with self._lock:
            cached = self._files.get(rel)
            if cached is not None and cached[0] == digest:
                self._files[rel] = (digest, cached[1], key)
                self._files.move_to_end(rel)
                return cached[1]
        lines = FileLines(data)
        with self._lock:
            old = self._files.pop(rel, None)
            self._files[rel] = (digest, lines, key)
            self._size += lines.size - (old[1].size if old else 0)
            while self._size > self.capacity and len(self._files) > 1:
                _, (_, dropped, _) = self._files.popitem(last=False)
                self._size -= dropped.size
        return lines
