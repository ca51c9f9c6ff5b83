"""A store that tells subscribers about each committed append: how the server's live
stream, metrics and traces follow sessions without code in the loop."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

from codeloop.events import Event, StoredEvent
from codeloop.session.store import LOCAL_OWNER, EventStore, SessionRow

# Called after an append commits, with the events as stored (seqs included).
Subscriber = Callable[[list[StoredEvent]], None]

log = logging.getLogger(__name__)


class ObservedStore:
    """Delegates to `inner`; after each append calls every subscriber in order. A subscriber
    that fails is logged and skipped: telemetry never breaks a session."""

    def __init__(self, inner: EventStore, subscribers: Sequence[Subscriber] = (),
                 serialise_writes: bool = False) -> None:
        self.inner = inner
        self.subscribers = list(subscribers)
        # SQLite's busy handler backs off by sleeping (up to 100 ms), which showed up as
        # stream latency spikes: session threads of one process take turns here instead.
        self._write_lock = threading.Lock() if serialise_writes else None

    @property
    def path(self) -> Path | None:
        """The SQLite file underneath (None for PostgreSQL): what sits beside it, such as the
        memory store, is found from here."""
        path = getattr(self.inner, "path", None)
        return path if isinstance(path, Path) else None

    @property
    def url(self) -> str | None:
        """The PostgreSQL URL underneath (None for SQLite): the memory store lives there too."""
        url = getattr(self.inner, "url", None)
        return url if isinstance(url, str) else None

    def subscribe(self, subscriber: Subscriber) -> None:
        self.subscribers.append(subscriber)

    def append(self, session_id: str, events: Sequence[Event],
               after_seq: int | None = None) -> int:
        if self._write_lock is not None:
            with self._write_lock:
                seq = self.inner.append(session_id, events, after_seq)
        else:
            seq = self.inner.append(session_id, events, after_seq)
        if events:
            first = seq - len(events) + 1
            stored = [StoredEvent(session_id=session_id, seq=first + n, event=e)
                      for n, e in enumerate(events)]
            for subscriber in self.subscribers:
                try:
                    subscriber(stored)
                except Exception:  # a broken exporter must not stop the session
                    log.exception("event subscriber %r failed", subscriber)
        return seq

    def create(self, session_id: str, owner: str = LOCAL_OWNER) -> None:
        self.inner.create(session_id, owner)

    def read(self, session_id: str, after_seq: int = 0) -> list[StoredEvent]:
        return self.inner.read(session_id, after_seq)

    def read_wire(self, session_id: str, after_seq: int) -> list[tuple[int, str]]:
        return self.inner.read_wire(session_id, after_seq)

    def sessions(self, owner: str | tuple[str, ...] | None = None,
                 status: str | None = None) -> list[SessionRow]:
        return self.inner.sessions(owner, status)

    def get(self, session_id: str) -> SessionRow:
        return self.inner.get(session_id)

    def wait(self, session_id: str, after_seq: int, timeout: float) -> bool:
        return self.inner.wait(session_id, after_seq, timeout)

    def ping(self) -> None:
        self.inner.ping()

    def close(self) -> None:
        self.inner.close()
