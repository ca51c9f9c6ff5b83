"""The event store in PostgreSQL (psycopg 3 with a connection pool), for when more than one
process writes sessions; the same interface and listing fold as the SQLite store. Each
append commits with a NOTIFY on CHANNEL naming the session, so listeners in any process
hear of it."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Sequence
from typing import Any

import psycopg
from psycopg_pool import PoolTimeout

from codeloop.errors import SessionNotFound, StoreError
from codeloop.events import Event, StoredEvent, parse_event_json
from codeloop.session.pg_pool import HINT, OPEN_TIMEOUT_S, display_url, open_pool
from codeloop.session.store import LOCAL_OWNER, SessionRow
from codeloop.session.store_append import AppendPlan, plan_append, wait_for_append, wire_message

CHANNEL = "codeloop_events"
_COLUMNS = "id, owner, created, updated, task, repo, model, status, steps, cost_usd, last_seq"
# Concurrent first starts would race on CREATE TABLE IF NOT EXISTS; this lock orders them.
_SCHEMA_LOCK = 0x636F64656C6F6F70  # "codeloop"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    owner TEXT NOT NULL DEFAULT 'local',
    created DOUBLE PRECISION NOT NULL,
    updated DOUBLE PRECISION NOT NULL,
    task TEXT NOT NULL DEFAULT '',
    repo TEXT NOT NULL DEFAULT '',
    model TEXT NOT NULL DEFAULT '',
    status TEXT NOT NULL DEFAULT 'created',
    steps INTEGER NOT NULL DEFAULT 0,
    cost_usd DOUBLE PRECISION NOT NULL DEFAULT 0,
    last_seq INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS events (
    session_id TEXT NOT NULL REFERENCES sessions(id),
    seq INTEGER NOT NULL,
    type TEXT NOT NULL,
    ts DOUBLE PRECISION NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)
);
CREATE INDEX IF NOT EXISTS sessions_owner ON sessions(owner, updated);
"""


class PostgresEventStore:
    """All sessions in two tables; an append is one transaction holding the session's row
    lock, so appends to one session are serialised across processes."""

    def __init__(self, url: str, *, max_size: int = 10, timeout: float = OPEN_TIMEOUT_S) -> None:
        self.url = url
        self._cond = threading.Condition()
        self._pool = open_pool(url, "event store", name="codeloop-events", max_size=max_size,
                               relaxed=True, timeout=timeout)
        try:
            with self._pool.connection() as conn, conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
                conn.execute(_SCHEMA)
        except (psycopg.Error, PoolTimeout) as exc:
            self._pool.close()
            raise StoreError(
                f"cannot open the PostgreSQL event store at {display_url(url)}: {exc}", HINT,
            ) from exc

    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        try:
            with self._pool.connection() as conn:
                return conn.execute(sql, params).fetchall()
        except (psycopg.Error, PoolTimeout) as exc:
            raise StoreError(f"the PostgreSQL event store at {display_url(self.url)} failed: "
                             f"{exc}", "check that the database server runs") from exc

    def create(self, session_id: str, owner: str = LOCAL_OWNER) -> None:
        now = time.time()
        try:
            with self._pool.connection() as conn:
                conn.execute("INSERT INTO sessions (id, owner, created, updated) "
                             "VALUES (%s, %s, %s, %s)", (session_id, owner, now, now))
        except psycopg.errors.UniqueViolation as exc:
            raise StoreError(f"session {session_id} already exists") from exc
        except (psycopg.Error, PoolTimeout) as exc:
            raise StoreError(f"could not create session {session_id}: {exc}") from exc

    def append(self, session_id: str, events: Sequence[Event],
               after_seq: int | None = None) -> int:
        if not events:
            return self.get(session_id).last_seq
        base = after_seq
        for attempt in range(3):
            try:
                plan = self._append_once(session_id, events, base)
                break
            except _Lost as lost:
                # The connection broke, perhaps after the commit: retry at the same seqs, where
                # events already stored are recognised and skipped, never written twice.
                base = lost.base
                if attempt == 2:
                    raise StoreError(
                        f"could not append to session {session_id}: {lost.__cause__}",
                        "check that the database server runs; the log up to the previous "
                        "step is intact") from lost.__cause__
        with self._cond:
            self._cond.notify_all()
        return plan.last_seq

    def _append_once(self, session_id: str, events: Sequence[Event],
                     after_seq: int | None) -> AppendPlan:
        base = after_seq
        try:
            with self._pool.connection() as conn, conn.transaction():
                row = conn.execute("SELECT last_seq, steps, cost_usd FROM sessions "
                                   "WHERE id = %s FOR UPDATE", (session_id,)).fetchone()
                if row is None:
                    raise SessionNotFound(f"no session {session_id}")
                base = int(row[0]) if base is None else base

                def stored(lo: int, hi: int) -> dict[int, str]:
                    return dict(conn.execute(
                        "SELECT seq, data FROM events WHERE session_id = %s AND seq > %s "
                        "AND seq <= %s", (session_id, lo, hi)).fetchall())

                plan = plan_append(session_id, events, int(row[0]), base, stored)
                if plan.rows:
                    with conn.cursor() as cur:
                        cur.executemany("INSERT INTO events (session_id, seq, type, ts, data) "
                                        "VALUES (%s, %s, %s, %s, %s)", plan.rows)
                    cols = "".join(f", {k} = %s" for k in plan.updates)
                    conn.execute(
                        f"UPDATE sessions SET last_seq = %s, steps = steps + %s, "
                        f"cost_usd = cost_usd + %s, updated = %s{cols} WHERE id = %s",
                        (plan.last_seq, plan.steps, plan.cost_usd, time.time(),
                         *plan.updates.values(), session_id))
                    conn.execute("SELECT pg_notify(%s, %s)", (CHANNEL, session_id))
                return plan
        except (psycopg.OperationalError, PoolTimeout) as exc:
            raise _Lost(base) from exc
        except psycopg.Error as exc:
            raise StoreError(f"could not append to session {session_id}: {exc}",
                             "the log up to the previous step is intact") from exc

    def read(self, session_id: str, after_seq: int = 0) -> list[StoredEvent]:
        rows = self._query("SELECT seq, data FROM events WHERE session_id = %s AND seq > %s "
                           "ORDER BY seq", (session_id, after_seq))
        if not rows and after_seq == 0:
            self.get(session_id)
        return [StoredEvent(session_id=session_id, seq=int(seq), event=parse_event_json(data))
                for seq, data in rows]

    def read_wire(self, session_id: str, after_seq: int) -> list[tuple[int, str]]:
        rows = self._query("SELECT seq, type, ts, data FROM events WHERE session_id = %s "
                           "AND seq > %s ORDER BY seq", (session_id, after_seq))
        return [(int(seq), wire_message(seq, kind, ts, data)) for seq, kind, ts, data in rows]

    def sessions(self, owner: str | tuple[str, ...] | None = None,
                 status: str | None = None) -> list[SessionRow]:
        clauses: list[str] = []
        params: list[Any] = []
        if owner is not None:
            clauses.append("owner = ANY(%s)")
            params.append([owner] if isinstance(owner, str) else list(owner))
        if status is not None:
            clauses.append("status = %s")
            params.append(status)
        where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
        return [_row(r) for r in self._query(
            f"SELECT {_COLUMNS} FROM sessions{where} ORDER BY created DESC", params)]

    def get(self, session_id: str) -> SessionRow:
        rows = self._query(f"SELECT {_COLUMNS} FROM sessions WHERE id = %s", (session_id,))
        if not rows:
            rows = self._query(f"SELECT {_COLUMNS} FROM sessions WHERE starts_with(id, %s) "
                               "LIMIT 2", (session_id,))
            if len(rows) != 1:
                raise SessionNotFound(f"no session {session_id!r}",
                                      "run `codeloop sessions` to list the sessions")
        return _row(rows[0])

    def wait(self, session_id: str, after_seq: int, timeout: float) -> bool:
        return wait_for_append(lambda: self.get(session_id).last_seq, self._cond, after_seq,
                               timeout)

    def ping(self) -> None:
        self._query("SELECT 1")

    def close(self) -> None:
        self._pool.close()


class _Lost(Exception):
    """The connection broke during an append whose seqs start after `base` (None: it broke
    before the log's end was read, so nothing can have been written)."""

    def __init__(self, base: int | None) -> None:
        super().__init__(base)
        self.base = base


def _row(r: Iterable[Any]) -> SessionRow:
    (sid, owner, created, updated, task, repo, model, status, steps, cost, last_seq) = tuple(r)
    return SessionRow(id=str(sid), owner=str(owner), created=float(created),
                      updated=float(updated), task=str(task), repo=str(repo), model=str(model),
                      status=str(status), steps=int(steps), cost_usd=float(cost),
                      last_seq=int(last_seq))
