"""One SQLite connection per thread to one WAL database file: how our stores open theirs."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path


class ThreadConnections:
    """Each thread gets its own connection (autocommit, WAL, synchronous=NORMAL: at most the
    last transactions lost on power loss, never corruption) plus the store's own `pragmas`."""

    def __init__(self, path: Path, pragmas: Sequence[str] = ()) -> None:
        self.path = path
        self.pragmas = tuple(pragmas)
        self._local = threading.local()

    def get(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, timeout=30.0, isolation_level=None,
                                   check_same_thread=False)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            for pragma in self.pragmas:
                conn.execute(f"PRAGMA {pragma}")
            self._local.conn = conn
        return conn

    def close(self) -> None:
        """Close this thread's connection; the next `get` opens a new one."""
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None
