"""Recently read files kept split into lines, keyed by content hash.

The context builder and the tools read the same large files for one query after another;
splitting a large file costs more than reading it, so the lines of a content already split
are reused (the caller checked the hash on this read).
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from codeloop.index.analyse import decode

# Lines kept (~5 MB of text).
RECENT_LINES = 60_000


class RecentLines:
    def __init__(self, capacity: int = RECENT_LINES) -> None:
        self.capacity = capacity
        self._lock = threading.Lock()
        self._files: OrderedDict[str, tuple[str, list[str]]] = OrderedDict()
        self._count = 0

    def split(self, rel: str, digest: str, data: bytes) -> list[str]:
        """`data`'s lines, reused when `rel` was split with the same hash recently."""
        with self._lock:
            cached = self._files.get(rel)
            if cached is not None and cached[0] == digest:
                self._files.move_to_end(rel)
                return cached[1]
        lines = decode(data).splitlines()
        with self._lock:
            old = self._files.pop(rel, None)
            self._files[rel] = (digest, lines)
            self._count += len(lines) - (len(old[1]) if old else 0)
            while self._count > self.capacity and len(self._files) > 1:
                _, (_, dropped) = self._files.popitem(last=False)
                self._count -= len(dropped)
        return lines
