"""Opening a PostgreSQL connection pool for the stores: a clear error at once when the
server cannot be reached, and room for a slow start when it can."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg
from psycopg_pool import ConnectionPool, PoolTimeout

from codeloop.errors import StoreError

# One connection first, for psycopg's own reason when it fails (refused, no such database,
# bad password): the pool would retry it until its timeout and then say only "incomplete".
CONNECT_TIMEOUT_S = 10
# Then the pool, on a server known to answer: a loaded machine (or server) has taken more
# than 10 s to hand over the first connections.
OPEN_TIMEOUT_S = 30.0
HINT = ("check that the server runs and CODELOOP_DATABASE_URL names a database this user "
        "may create tables in")


def display_url(url: str) -> str:
    """The URL with its password masked, for messages."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username or ''}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


def relaxed_commit(conn: psycopg.Connection[Any]) -> None:
    """Commit without waiting for the disk, the trade-off the SQLite store makes too
    (synchronous=NORMAL): a crash of codeloop loses nothing, a crash of the database server
    or the machine may lose the last fraction of a second, and never corrupts. A URL that
    sets synchronous_commit itself (options=-csynchronous_commit%3Don) keeps its choice."""
    conn.execute("SET synchronous_commit = off")


def open_pool(url: str, what: str, *, name: str, max_size: int, relaxed: bool = False,
              timeout: float = OPEN_TIMEOUT_S) -> ConnectionPool:
    """An open autocommit pool on `url`, or `StoreError` naming `what` ("event store") and
    the server's own reason; `relaxed`: commits by `relaxed_commit` unless the URL chooses."""
    configure = relaxed_commit if relaxed and "synchronous_commit" not in url else None
    try:
        psycopg.connect(url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S).close()
    except psycopg.Error as exc:
        raise StoreError(f"cannot open the PostgreSQL {what} at {display_url(url)}: "
                         f"{str(exc).strip()}", HINT) from exc
    pool: ConnectionPool = ConnectionPool(url, min_size=1, max_size=max_size, open=False,
                                          kwargs={"autocommit": True}, timeout=timeout,
                                          configure=configure, name=name)
    try:
        pool.open(wait=True, timeout=timeout)
    except PoolTimeout as exc:
        pool.close()
        raise StoreError(f"cannot open the PostgreSQL {what} at {display_url(url)}: {exc}",
                         HINT) from exc
    return pool
