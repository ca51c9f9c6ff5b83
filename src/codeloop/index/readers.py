"""Foreground reads before background sweeps.

A context build or a tool call marks itself (`reading`); a sweep on another thread calls
`pause` between its steps and waits (a while at most) until no such read runs, rather than
share the interpreter with it: a background sweep started by a build's freshness check
doubled the p95 of context builds.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

# How long a sweep waits, at each of its steps, for a foreground read to end.
READER_WAIT_S = 1.0


class ReaderPriority:
    def __init__(self) -> None:
        self._readers: Counter[int] = Counter()  # foreground reads by thread
        self._done = threading.Condition()

    @contextmanager
    def reading(self) -> Iterator[None]:
        me = threading.get_ident()
        with self._done:
            self._readers[me] += 1
        try:
            yield
        finally:
            with self._done:
                self._readers[me] -= 1
                if not self._readers[me]:
                    del self._readers[me]
                self._done.notify_all()

    def pause(self) -> None:
        """Wait (`READER_WAIT_S` at most) while another thread's read runs."""
        if not self._readers:
            return
        me = threading.get_ident()
        with self._done:
            self._done.wait_for(lambda: self._readers.keys() <= {me}, READER_WAIT_S)
