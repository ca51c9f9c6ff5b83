"""Wake WebSocket tails when a session's log grows. With SQLite: at once for appends made in
this process, by polling for appends made by other processes. With PostgreSQL: a LISTEN on
the store's channel hears every process's appends (the log, not the server, is the state)."""

from __future__ import annotations

import asyncio
import logging
import threading
from pathlib import Path

from codeloop.events import StoredEvent
from codeloop.session.store_observed import ObservedStore
from codeloop.session.stores import open_event_store

log = logging.getLogger(__name__)


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

    def on_events(self, events: list[StoredEvent]) -> None:
        """A store subscriber: wake the tails of the events' session."""
        if events:
            self.appended(events[0].session_id)


class PgListener:
    """A thread holding one connection that LISTENs on the store's channel and wakes the
    notifier for each session named; reconnects when the connection drops."""

    def __init__(self, url: str, notifier: Notifier) -> None:
        self.url = url
        self.notifier = notifier
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="codeloop-pg-listen",
                                        daemon=True)
        self.listening = threading.Event()

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        import psycopg

        from codeloop.session.pg_pool import display_url
        from codeloop.session.store_pg import CHANNEL

        while not self._stop.is_set():
            try:
                with psycopg.connect(self.url, autocommit=True) as conn:
                    conn.execute(f"LISTEN {CHANNEL}")
                    self.listening.set()
                    while not self._stop.is_set():
                        for note in conn.notifies(timeout=0.5):
                            self.notifier.appended(note.payload)
            except psycopg.Error as exc:
                self.listening.clear()
                log.warning("lost the LISTEN connection to %s: %s", display_url(self.url), exc)
                self._stop.wait(1.0)  # tails poll meanwhile, so nothing is missed


def live_store(data_dir: Path, notifier: Notifier,
               database_url: str | None) -> tuple[ObservedStore, PgListener | None]:
    """The server's store: PostgreSQL with a listener when `database_url` is set, else the
    data directory's SQLite file with appends waking the notifier directly."""
    inner = open_event_store(data_dir, url=database_url)
    if database_url:
        return ObservedStore(inner), PgListener(database_url, notifier)
    return ObservedStore(inner, [notifier.on_events], serialise_writes=True), None
