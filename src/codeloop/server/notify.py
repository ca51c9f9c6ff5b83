"""Wake WebSocket tails when a session's log grows: at once for appends made in this process,
by polling for appends made by other processes (the log, not the server, is the state)."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Sequence
from pathlib import Path

from codeloop.events import Event
from codeloop.session.store import SQLiteEventStore


class Notifier:
    """One asyncio.Event per session that is set (and replaced) on each append."""

    def __init__(self) -> None:
        self._events: dict[str, asyncio.Event] = {}
        self._loop: asyncio.AbstractEventLoop | None = None

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop

    def current(self, session_id: str) -> asyncio.Event:
        """Take this before reading the log: any append after the read sets it."""
        event = self._events.get(session_id)
        if event is None:
            event = self._events[session_id] = asyncio.Event()
        return event

    def _wake(self, session_id: str) -> None:
        event = self._events.pop(session_id, None)
        if event is not None:
            event.set()

    def appended(self, session_id: str) -> None:
        """Called from any thread after an append commits."""
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            self._wake(session_id)
        else:
            loop.call_soon_threadsafe(self._wake, session_id)


class NotifyingStore(SQLiteEventStore):
    """The SQLite store that tells a Notifier about each append."""

    def __init__(self, path: Path, notifier: Notifier) -> None:
        super().__init__(path)
        self.notifier = notifier
        # Session threads take turns here rather than in SQLite: SQLite's busy handler backs
        # off by sleeping (up to 100 ms), which showed up as stream latency spikes.
        self._write_lock = threading.Lock()

    def append(self, session_id: str, events: Sequence[Event]) -> int:
        with self._write_lock:
            seq = super().append(session_id, events)
        self.notifier.appended(session_id)
        return seq

    def read_wire(self, session_id: str, after_seq: int) -> list[tuple[int, str]]:
        """Events after `after_seq` as (seq, JSON message) without parsing them: the stored
        JSON is spliced in as is, which keeps the streaming path cheap."""
        rows = self._conn().execute(
            "SELECT seq, type, ts, data FROM events WHERE session_id = ? AND seq > ? ORDER BY seq",
            (session_id, after_seq),
        ).fetchall()
        return [(int(seq), f'{{"seq":{int(seq)},"type":{json.dumps(kind)},"ts":{float(ts)!r},'
                           f'"event":{data}}}') for seq, kind, ts, data in rows]
