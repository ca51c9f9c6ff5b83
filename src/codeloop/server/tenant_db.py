"""The database under the tenant store: a SQLite file in the data directory, or the event
store's PostgreSQL database when CODELOOP_DATABASE_URL is set, so that several server
processes share tenants, users, tokens, the audit log and request rates.

Both run the same SQL (written with `?` placeholders, in the dialect both speak: ON CONFLICT,
RETURNING); only the schemas differ. A transaction can take a named lock that serialises it
against every other holder of the name, in any process.
"""

from __future__ import annotations

import sqlite3
import threading
import zlib
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any, Protocol

from codeloop.errors import StoreError
from codeloop.private_paths import private_dir, private_file
from codeloop.sqlite_local import ThreadConnections

Row = tuple[Any, ...]

_COMMON = """
CREATE TABLE IF NOT EXISTS users (
    name TEXT PRIMARY KEY,
    tenant TEXT NOT NULL REFERENCES tenants(name),
    role TEXT NOT NULL
);
"""
SQLITE_SCHEMA = """
CREATE TABLE IF NOT EXISTS tenants (
    name TEXT PRIMARY KEY,
    created REAL NOT NULL,
    policy TEXT NOT NULL DEFAULT '{}'
);
""" + _COMMON + """
CREATE TABLE IF NOT EXISTS audit (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    ts REAL NOT NULL,
    type TEXT NOT NULL,
    tenant TEXT NOT NULL,
    data TEXT NOT NULL
);
"""
POSTGRES_SCHEMA = """
CREATE TABLE IF NOT EXISTS tenants (
    name TEXT PRIMARY KEY,
    created DOUBLE PRECISION NOT NULL,
    policy TEXT NOT NULL DEFAULT '{}'
);
""" + _COMMON + """
CREATE TABLE IF NOT EXISTS audit (
    seq BIGSERIAL PRIMARY KEY,
    ts DOUBLE PRECISION NOT NULL,
    type TEXT NOT NULL,
    tenant TEXT NOT NULL,
    data TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS tokens (
    digest TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    created DOUBLE PRECISION NOT NULL
);
CREATE TABLE IF NOT EXISTS request_times (
    tenant TEXT NOT NULL,
    ts DOUBLE PRECISION NOT NULL
);
CREATE INDEX IF NOT EXISTS request_times_tenant ON request_times(tenant, ts);
"""
# Concurrent first starts would race on CREATE TABLE IF NOT EXISTS; this lock orders them.
_SCHEMA_LOCK = 0x636C74656E616E74  # "cltenant"


class Duplicate(Exception):
    """An insert hit a row with the same key."""


class Sql(Protocol):
    """Statements on one connection (a transaction) or on any (autocommit)."""

    def rows(self, sql: str, params: Sequence[object] = ()) -> list[Row]: ...

    def lock(self, name: str) -> None:
        """Inside a transaction: wait for every other holder of `name` (any process)."""
        ...


class TenantDb(Protocol):
    shared: bool  # other processes may use it at the same time

    def rows(self, sql: str, params: Sequence[object] = ()) -> list[Row]: ...

    def transaction(self) -> AbstractContextManager[Sql]: ...

    def close(self) -> None: ...


class SQLiteTenantDb:
    """`<data_dir>/tenants.sqlite`, mode 0600; one process's threads serialise on a lock."""

    shared = False

    def __init__(self, path: Path) -> None:
        self.path = path
        self._conns = ThreadConnections(path)
        self._locks: dict[str, threading.Lock] = {}
        try:
            private_dir(path.parent)
            private_file(path)
            self._conns.get().executescript(SQLITE_SCHEMA)
        except (sqlite3.Error, OSError) as exc:
            raise StoreError(f"cannot open the tenant store at {path}: {exc}",
                             "check the file's permissions and free disk space") from exc

    def rows(self, sql: str, params: Sequence[object] = ()) -> list[Row]:
        try:
            return self._conns.get().execute(sql, tuple(params)).fetchall()
        except sqlite3.IntegrityError as exc:
            raise Duplicate(str(exc)) from exc

    def lock(self, name: str) -> None:
        """Nothing to do: BEGIN IMMEDIATE holds the file's write lock already."""

    @contextmanager
    def transaction(self) -> Iterator[Sql]:
        conn = self._conns.get()
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield self
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    def close(self) -> None:
        self._conns.close()


class PostgresTenantDb:
    """The tables beside the event store's, through a small connection pool."""

    shared = True

    def __init__(self, url: str, *, max_size: int = 8, timeout: float | None = None) -> None:
        import psycopg
        from psycopg_pool import PoolTimeout

        from codeloop.session.pg_pool import HINT, OPEN_TIMEOUT_S, display_url, open_pool

        self._errors: tuple[type[Exception], ...] = (psycopg.Error, PoolTimeout)
        self._unique = psycopg.errors.UniqueViolation
        self._where = display_url(url)
        self._pool = open_pool(url, "tenant store", name="codeloop-tenants", max_size=max_size,
                               timeout=OPEN_TIMEOUT_S if timeout is None else timeout)
        try:
            with self._pool.connection() as conn, conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
                conn.execute(POSTGRES_SCHEMA)
        except self._errors as exc:
            self._pool.close()
            raise StoreError(f"cannot open the PostgreSQL tenant store at {self._where}: {exc}",
                             HINT) from exc

    def _run(self, conn: Any, sql: str, params: Sequence[object]) -> list[Row]:
        try:
            cur = conn.execute(sql.replace("?", "%s"), tuple(params))
            return list(cur.fetchall()) if cur.description else []
        except self._unique as exc:
            raise Duplicate(str(exc)) from exc
        except self._errors as exc:
            raise StoreError(f"the PostgreSQL tenant store at {self._where} failed: {exc}",
                             "check that the database server runs") from exc

    def rows(self, sql: str, params: Sequence[object] = ()) -> list[Row]:
        try:
            with self._pool.connection() as conn:
                return self._run(conn, sql, params)
        except self._errors as exc:
            raise StoreError(f"the PostgreSQL tenant store at {self._where} failed: {exc}",
                             "check that the database server runs") from exc

    @contextmanager
    def transaction(self) -> Iterator[Sql]:
        with self._pool.connection() as conn, conn.transaction():
            yield _Bound(self, conn)

    def close(self) -> None:
        self._pool.close()


class _Bound:
    """A PostgreSQL transaction's statements."""

    def __init__(self, db: PostgresTenantDb, conn: Any) -> None:
        self.db = db
        self.conn = conn

    def rows(self, sql: str, params: Sequence[object] = ()) -> list[Row]:
        return self.db._run(self.conn, sql, params)

    def lock(self, name: str) -> None:
        # Held until the transaction ends; the key is a stable hash of the name.
        self.rows("SELECT pg_advisory_xact_lock(?::int4, ?::int4)",
                  (_SCHEMA_LOCK >> 32, zlib.crc32(name.encode()) - 2**31))


class NamedLock:
    """A lock for this process's threads and, on a shared database, for every process: held
    as a transaction holding the name's lock."""

    def __init__(self, db: TenantDb, name: str) -> None:
        self.db = db
        self.name = name
        self._threads = threading.Lock()
        self._held: AbstractContextManager[Sql] | None = None

    def __enter__(self) -> None:
        self._threads.acquire()
        if not self.db.shared:
            return
        try:
            held = self.db.transaction()
            held.__enter__().lock(self.name)
        except BaseException:
            self._threads.release()
            raise
        self._held = held

    def __exit__(self, *exc: object) -> None:
        held, self._held = self._held, None
        try:
            if held is not None:
                held.__exit__(None, None, None)
        finally:
            self._threads.release()
