"""The event store: an append-only log per session, in one SQLite file (WAL) by default
(PostgreSQL in store_pg; `stores.open_event_store` picks one)."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from codeloop.errors import SessionNotFound, StoreError
from codeloop.events import Event, StoredEvent, parse_event_json
from codeloop.private_paths import FILE_MODE, private_dir, private_file, tighten
from codeloop.session.store_append import plan_append, wait_for_append, wire_message
from codeloop.sqlite_local import ThreadConnections

# The owner of the sessions the command line starts (the server's sessions name their user).
LOCAL_OWNER = "local"
# The server's operator: whoever holds the data directory's admin token (`server-token`).
ADMIN_OWNER = "admin"


@dataclass(frozen=True)
class SessionRow:
    """The listing a store keeps beside the log; derived from events, refreshed on append."""

    id: str
    created: float
    updated: float
    task: str
    repo: str
    model: str
    status: str
    steps: int
    cost_usd: float
    owner: str
    last_seq: int


class EventStore(Protocol):
    def create(self, session_id: str, owner: str = LOCAL_OWNER) -> None: ...

    def append(self, session_id: str, events: Sequence[Event],
               after_seq: int | None = None) -> int:
        """Append atomically; returns the sequence number of the last event. With
        `after_seq` the events take the seqs after it, and replaying an append that was
        stored already writes nothing (idempotent per session and seq)."""
        ...

    def read(self, session_id: str, after_seq: int = 0) -> list[StoredEvent]: ...

    def sessions(self, owner: str | tuple[str, ...] | None = None,
                 status: str | None = None) -> list[SessionRow]:
        """Newest first; `owner` is one owner or a tuple of them."""
        ...

    def get(self, session_id: str) -> SessionRow: ...

    def wait(self, session_id: str, after_seq: int, timeout: float) -> bool:
        """Block until an event after `after_seq` exists or `timeout` passes; True if one does."""
        ...

    def read_wire(self, session_id: str, after_seq: int) -> list[tuple[int, str]]:
        """Events after `after_seq` as (seq, JSON message), the stored JSON unparsed."""
        ...

    def ping(self) -> None:
        """Raise StoreError unless the store answers a query."""
        ...

    def close(self) -> None: ...


_SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    owner TEXT NOT NULL DEFAULT 'local',
    created REAL NOT NULL,
    updated REAL NOT NULL,
    task TEXT NOT NULL DEFAULT '',
    repo TEXT NOT NULL DEFAULT '',
    model TEXT NOT NULL DEFAULT '',
    status TEXT NOT NULL DEFAULT 'created',
    steps INTEGER NOT NULL DEFAULT 0,
    cost_usd REAL NOT NULL DEFAULT 0,
    last_seq INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS events (
    session_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    type TEXT NOT NULL,
    ts REAL NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS sessions_owner ON sessions(owner, updated);
"""


class SQLiteEventStore:
    """One database file for all of a user's sessions; each append is one transaction."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._conns = ThreadConnections(path)
        self._cond = threading.Condition()
        try:
            # The log holds every prompt, output and diff: only its owner may read it.
            private_dir(path.parent)
            private_file(path)
            conn = self._conn()
            conn.executescript(_SCHEMA)
            for suffix in ("-wal", "-shm"):  # SQLite makes them like the database; older
                tighten(path.with_name(path.name + suffix), FILE_MODE)  # ones may be looser
        except (sqlite3.Error, OSError) as exc:
            raise StoreError(
                f"cannot open the event store at {path}: {exc}",
                "check the file's permissions and free disk space, or set CODELOOP_DATA_DIR",
            ) from exc

    def _conn(self) -> sqlite3.Connection:
        return self._conns.get()

    def create(self, session_id: str, owner: str = LOCAL_OWNER) -> None:
        now = time.time()
        try:
            self._conn().execute(
                "INSERT INTO sessions (id, owner, created, updated) VALUES (?, ?, ?, ?)",
                (session_id, owner, now, now),
            )
        except sqlite3.IntegrityError as exc:
            raise StoreError(f"session {session_id} already exists") from exc

    def append(self, session_id: str, events: Sequence[Event],
               after_seq: int | None = None) -> int:
        if not events:
            return self.get(session_id).last_seq
        conn = self._conn()
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                row = conn.execute(
                    "SELECT last_seq, steps, cost_usd FROM sessions WHERE id = ?", (session_id,)
                ).fetchone()
                if row is None:
                    raise SessionNotFound(f"no session {session_id}")

                def stored(lo: int, hi: int) -> dict[int, str]:
                    return dict(conn.execute(
                        "SELECT seq, data FROM events WHERE session_id = ? AND seq > ? "
                        "AND seq <= ?", (session_id, lo, hi)).fetchall())

                plan = plan_append(session_id, events, int(row[0]), after_seq, stored)
                if plan.rows:
                    conn.executemany("INSERT INTO events (session_id, seq, type, ts, data) "
                                     "VALUES (?, ?, ?, ?, ?)", plan.rows)
                    cols = "".join(f", {k} = ?" for k in plan.updates)
                    conn.execute(
                        f"UPDATE sessions SET last_seq = ?, steps = ?, cost_usd = ?, "
                        f"updated = ?{cols} WHERE id = ?",
                        (plan.last_seq, int(row[1]) + plan.steps, float(row[2]) + plan.cost_usd,
                         time.time(), *plan.updates.values(), session_id),
                    )
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        except sqlite3.Error as exc:
            raise StoreError(
                f"could not append to session {session_id}: {exc}",
                "check free disk space; the log up to the previous step is intact",
            ) from exc
        with self._cond:
            self._cond.notify_all()
        return plan.last_seq

    def read(self, session_id: str, after_seq: int = 0) -> list[StoredEvent]:
        rows = self._conn().execute(
            "SELECT seq, data FROM events WHERE session_id = ? AND seq > ? ORDER BY seq",
            (session_id, after_seq),
        ).fetchall()
        if not rows and after_seq == 0:
            self.get(session_id)
        return [
            StoredEvent(session_id=session_id, seq=int(seq), event=parse_event_json(data))
            for seq, data in rows
        ]

    def sessions(self, owner: str | tuple[str, ...] | None = None,
                 status: str | None = None) -> list[SessionRow]:
        query = "SELECT * FROM sessions"
        clauses: list[str] = []
        params: list[str] = []
        if owner is not None:
            owners = (owner,) if isinstance(owner, str) else owner
            clauses.append(f"owner IN ({', '.join('?' for _ in owners)})")
            params.extend(owners)
        if status is not None:
            clauses.append("status = ?")
            params.append(status)
        if clauses:
            query += " WHERE " + " AND ".join(clauses)
        query += " ORDER BY created DESC"
        return [self._row(r) for r in self._conn().execute(query, params).fetchall()]

    def get(self, session_id: str) -> SessionRow:
        row = self._conn().execute("SELECT * FROM sessions WHERE id = ?", (session_id,)).fetchone()
        if row is None:
            matches = self._conn().execute(
                "SELECT * FROM sessions WHERE id LIKE ?", (session_id + "%",)
            ).fetchall()
            if len(matches) == 1:
                return self._row(matches[0])
            raise SessionNotFound(
                f"no session {session_id!r}", "run `codeloop sessions` to list the sessions"
            )
        return self._row(row)

    def read_wire(self, session_id: str, after_seq: int) -> list[tuple[int, str]]:
        rows = self._conn().execute(
            "SELECT seq, type, ts, data FROM events WHERE session_id = ? AND seq > ? ORDER BY seq",
            (session_id, after_seq),
        ).fetchall()
        return [(int(seq), wire_message(seq, kind, ts, data)) for seq, kind, ts, data in rows]

    def ping(self) -> None:
        try:
            self._conn().execute("SELECT 1 FROM sessions LIMIT 1").fetchall()
        except sqlite3.Error as exc:
            raise StoreError(f"the event store at {self.path} does not answer: {exc}") from exc

    def close(self) -> None:
        """Close this thread's connection (others close when their threads end)."""
        self._conns.close()

    def set_owner(self, session_id: str, owner: str) -> None:
        self._conn().execute("UPDATE sessions SET owner = ? WHERE id = ?", (owner, session_id))

    def wait(self, session_id: str, after_seq: int, timeout: float) -> bool:
        return wait_for_append(lambda: self.get(session_id).last_seq, self._cond, after_seq,
                               timeout)

    @staticmethod
    def _row(r: Iterable[object]) -> SessionRow:
        (sid, owner, created, updated, task, repo, model, status, steps, cost, last_seq) = tuple(r)
        return SessionRow(
            id=str(sid), owner=str(owner), created=float(created), updated=float(updated),  # type: ignore[arg-type]
            task=str(task), repo=str(repo), model=str(model), status=str(status),
            steps=int(steps), cost_usd=float(cost), last_seq=int(last_seq),  # type: ignore[call-overload, arg-type]
        )
