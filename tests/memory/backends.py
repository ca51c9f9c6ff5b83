"""The two memory store backends for one test: a SQLite file under tmp_path, or a fresh
database on the test PostgreSQL server; and the bytes each keeps on disk."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from codeloop.memory.store import MemoryStore, SQLiteMemoryStore


@contextmanager
def memory_backend(request: pytest.FixtureRequest, tmp_path: Path
                   ) -> Iterator[Callable[..., MemoryStore]]:
    """Yields a function opening the backend's store (`use_vectors=`); each call is a new
    store object on the same data, as another process would open it."""
    if request.param == "sqlite":
        path = tmp_path / "data" / "memory.sqlite"
        yield lambda use_vectors=False: SQLiteMemoryStore(path, use_vectors=use_vectors)
        return
    from codeloop.memory.store_pg import PostgresMemoryStore

    url: str = request.getfixturevalue("pg_url")
    opened: list[PostgresMemoryStore] = []

    def open_pg(use_vectors: bool = False) -> MemoryStore:
        opened.append(PostgresMemoryStore(url, use_vectors=use_vectors))
        return opened[-1]

    try:
        yield open_pg
    finally:
        for store in opened:
            store.close()


def stored_bytes(store: MemoryStore) -> bytes:
    """Everything the store keeps on disk for its memories: the SQLite file and its WAL, or
    the PostgreSQL files of the memories table, its TOAST table and all their indexes (after
    a checkpoint has written them out). Skips when the server's files are not readable."""
    if isinstance(store, SQLiteMemoryStore):
        path = store.path
        return b"".join(p.read_bytes() for p in path.parent.glob(path.name + "*"))
    import psycopg

    from codeloop.memory.store_pg import PostgresMemoryStore

    assert isinstance(store, PostgresMemoryStore)
    with psycopg.connect(store.url, autocommit=True) as conn:
        conn.execute("CHECKPOINT")
        (base,) = conn.execute("SHOW data_directory").fetchone() or ("",)
        rows = conn.execute(
            "SELECT pg_relation_filepath(c.oid) FROM pg_class c WHERE c.oid IN ("
            " SELECT 'memories'::regclass UNION SELECT reltoastrelid FROM pg_class"
            "  WHERE oid = 'memories'::regclass AND reltoastrelid <> 0"
            " UNION SELECT indexrelid FROM pg_index WHERE indrelid IN ("
            "  SELECT 'memories'::regclass UNION SELECT reltoastrelid FROM pg_class"
            "   WHERE oid = 'memories'::regclass)) ").fetchall()
    root = Path(base)
    if not root.is_dir():
        pytest.skip(f"the PostgreSQL server's files ({root}) are not on this machine")
    out = b""
    for (rel,) in rows:
        first = root / rel
        out += b"".join(p.read_bytes() for p in sorted(first.parent.glob(first.name + "*")))
    return out
