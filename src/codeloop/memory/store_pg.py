"""The memory store in PostgreSQL, for when the event store is there too (several processes
share both). The same interface, visibility and ranking as the SQLite store: rows keep the
FTS5 stems of their text (`stems.py`) and recall scores them with FTS5's BM25, so both
stores return the same memories in the same order. `forget` deletes the rows and rewrites
the table (VACUUM FULL), so no table or index file keeps a forgotten memory's text.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Iterable, Sequence
from typing import Any

import psycopg
from psycopg_pool import PoolTimeout

from codeloop.errors import StoreError
from codeloop.index.terms import terms
from codeloop.memory import vectors
from codeloop.memory.owners import MERGED_OWNERS
from codeloop.memory.ranking import query_terms
from codeloop.memory.records import DEFAULT_TTL_S, Memory, NewMemory
from codeloop.memory.stems import bm25, stems
from codeloop.memory.store import (
    RankedRecall,
    clean_id,
    memory_from_row,
    new_id,
    pick,
)
from codeloop.session.pg_pool import HINT, OPEN_TIMEOUT_S, display_url, open_pool

# Concurrent first opens would race on CREATE TABLE IF NOT EXISTS; this lock orders them.
_SCHEMA_LOCK = 0x636C6D656D6F7279  # "clmemory"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS memories (
    n BIGSERIAL PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    owner TEXT NOT NULL,
    kind TEXT NOT NULL,
    scope TEXT NOT NULL,
    repo TEXT NOT NULL DEFAULT '',
    text TEXT NOT NULL,
    source TEXT NOT NULL,
    session_id TEXT NOT NULL DEFAULT '',
    event_seq BIGINT NOT NULL DEFAULT 0,
    created DOUBLE PRECISION NOT NULL,
    last_used DOUBLE PRECISION NOT NULL,
    ttl_s DOUBLE PRECISION NOT NULL,
    uses INTEGER NOT NULL DEFAULT 0,
    capture_key TEXT UNIQUE,
    stems TEXT[] NOT NULL,
    vector BYTEA
);
CREATE INDEX IF NOT EXISTS memories_owner ON memories(owner, repo);
CREATE INDEX IF NOT EXISTS memories_team ON memories(scope, repo);
CREATE INDEX IF NOT EXISTS memories_stems ON memories USING GIN (stems);
"""
# The SQLite store's column order (memory_from_row reads it); `user` is a keyword here.
_COLUMNS = ("id, owner, kind, scope, text, source, repo, session_id, event_seq, created, "
            "last_used, ttl_s, uses")
_VISIBLE = ("((m.owner = %(user)s AND (m.scope = 'user' OR (m.scope = 'repo' AND "
            "m.repo = %(repo)s))) OR (m.scope = 'team' AND m.repo = %(repo)s)) "
            "AND m.last_used + m.ttl_s > %(now)s")


class PostgresMemoryStore(RankedRecall):
    """Every user's memories in one table of the event store's database."""

    def __init__(self, url: str, *, use_vectors: bool | None = None, max_size: int = 4,
                 timeout: float = OPEN_TIMEOUT_S) -> None:
        self.url = url
        self.use_vectors = vectors.wanted() if use_vectors is None else use_vectors
        self._pool = open_pool(url, "memory store", name="codeloop-memory", max_size=max_size,
                               relaxed=True, timeout=timeout)
        try:
            with self._pool.connection() as conn, conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
                conn.execute(_SCHEMA)
            self._purge_expired()
            self._merge_owners()
        except (psycopg.Error, PoolTimeout) as exc:
            self._pool.close()
            raise StoreError(
                f"cannot open the PostgreSQL memory store at {display_url(url)}: {exc}",
                HINT) from exc

    def _query(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()
               ) -> list[tuple[Any, ...]]:
        try:
            with self._pool.connection() as conn:
                cur = conn.execute(sql, params)
                return cur.fetchall() if cur.description else []
        except (psycopg.Error, PoolTimeout) as exc:
            raise StoreError(f"the PostgreSQL memory store at {display_url(self.url)} failed: "
                             f"{exc}", "check that the database server runs") from exc

    def close(self) -> None:
        self._pool.close()

    # -- writing ----------------------------------------------------------------------------

    def add(self, new: NewMemory) -> Memory | None:
        now = time.time()
        ttl = new.ttl_s if new.ttl_s is not None else DEFAULT_TTL_S[new.kind]
        repo = "" if new.scope == "user" else new.repo
        vector = (vectors.to_blob(vectors.encode([new.text])[0])
                  if self.use_vectors and vectors.ready() else None)
        rows = self._query(
            "INSERT INTO memories (id, owner, kind, scope, repo, text, source, session_id, "
            "event_seq, created, last_used, ttl_s, capture_key, stems, vector) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) "
            f"ON CONFLICT DO NOTHING RETURNING {_COLUMNS}",
            (new_id(), new.user, new.kind, new.scope, repo, new.text, new.source,
             new.session_id, new.event_seq, now, now, ttl, new.capture_key,
             stems(terms(new.text)), vector))
        return memory_from_row(rows[0]) if rows else None

    def mark_used(self, ids: Sequence[str]) -> None:
        if ids:
            self._query("UPDATE memories SET last_used = %s, uses = uses + 1 "
                        "WHERE id = ANY(%s)", (time.time(), list(ids)))

    def forget(self, ids: Sequence[str], user: str) -> list[str]:
        if not ids:
            return []
        rows = self._query("DELETE FROM memories WHERE owner = %s AND id = ANY(%s) RETURNING id",
                           (user, list(ids)))
        self._rewrite(rows)
        return [str(mid) for (mid,) in rows]

    def _merge_owners(self) -> None:
        """Move the rows of owners that are now another's (`owners.MERGED_OWNERS`), first
        dropping those the new owner holds word for word."""
        for old, new in MERGED_OWNERS:
            self._rewrite(self._query(
                "DELETE FROM memories a USING memories b WHERE a.owner = %s AND b.owner = %s "
                "AND b.kind = a.kind AND b.scope = a.scope AND b.repo = a.repo "
                "AND b.text = a.text RETURNING a.n", (old, new)))
            self._query("UPDATE memories SET owner = %s WHERE owner = %s", (new, old))

    def _purge_expired(self) -> None:
        self._rewrite(self._query("DELETE FROM memories WHERE last_used + ttl_s <= %s "
                                  "RETURNING n", (time.time(),)))

    def _rewrite(self, deleted: list[tuple[Any, ...]]) -> None:
        """After a delete: a DELETE leaves the row's bytes in its page until the space is
        reused; VACUUM FULL writes the table, its TOAST and its indexes anew without them."""
        if deleted:
            self._query("VACUUM FULL memories")

    # -- reading ----------------------------------------------------------------------------

    def get(self, memory_id: str, user: str) -> Memory:
        memory_id = clean_id(memory_id)
        rows = self._query(
            f"SELECT {_COLUMNS} FROM memories WHERE (id = %s OR starts_with(id, %s)) "
            "AND (owner = %s OR scope = 'team')", (memory_id, memory_id, user))
        return pick(memory_id, [memory_from_row(r) for r in rows])

    def listing(self, user: str, repo: str | None = None) -> list[Memory]:
        if repo is None:
            where, params = "owner = %s OR scope = 'team'", [user]
        else:
            where = ("(owner = %s AND (scope = 'user' OR repo = %s)) "
                     "OR (scope = 'team' AND repo = %s)")
            params = [user, repo, repo]
        rows = self._query(f"SELECT {_COLUMNS} FROM memories WHERE ({where}) "
                           "AND last_used + ttl_s > %s ORDER BY created DESC",
                           (*params, time.time()))
        return [memory_from_row(r) for r in rows]

    def _lexical(self, query: str, params: dict[str, object], limit: int) -> dict[int, float]:
        # One stem per query term: FTS5 sees each quoted term as a one-token phrase.
        wanted = stems(query_terms(query))
        if not wanted:
            return {}
        # One statement (one snapshot, one round trip): the matches, and the statistics
        # BM25 needs over every memory, as FTS5 keeps them.
        rows = self._query(
            "SELECT m.n, m.stems, s.docs, s.tokens, f.freq FROM memories m, "
            "(SELECT count(*) AS docs, coalesce(sum(cardinality(stems)), 0) AS tokens "
            " FROM memories) s, "
            "(SELECT jsonb_object_agg(u.t, (SELECT count(*) FROM memories "
            "  WHERE stems @> ARRAY[u.t])) AS freq FROM unnest(%(distinct)s::text[]) AS u(t)) f "
            f"WHERE m.stems && %(q)s::text[] AND {_VISIBLE}",
            {**params, "q": wanted, "distinct": sorted(set(wanted))})
        if not rows:
            return {}
        _, _, total_docs, total_tokens, freq = rows[0]
        scores = bm25(wanted, {int(n): list(s) for n, s, *_ in rows},
                      {str(t): int(c) for t, c in freq.items()}, int(total_docs),
                      int(total_tokens))
        best = sorted(scores.items(), key=lambda item: (-item[1], item[0]))[:limit]
        return dict(best)

    def _semantic(self, query: str, params: dict[str, object], limit: int) -> dict[int, float]:
        rows = self._query(f"SELECT m.n, m.vector, m.text FROM memories m WHERE {_VISIBLE}",
                           params)
        stored = [(int(n), bytes(v)) for n, v, _ in rows if v is not None]
        missing = [(int(n), str(t)) for n, v, t in rows if v is None]
        if missing:  # stored while embeddings were off
            encoded = vectors.encode([t for _, t in missing])
            for (n, _), v in zip(missing, encoded, strict=True):
                blob = vectors.to_blob(v)
                self._query("UPDATE memories SET vector = %s WHERE n = %s", (blob, n))
                stored.append((n, blob))
        return dict(vectors.ranked(vectors.encode([query])[0], stored, limit))

    def _rows(self, rowids: Iterable[int]) -> dict[int, Memory]:
        ids = list(rowids)
        if not ids:
            return {}
        rows = self._query(f"SELECT n, {_COLUMNS} FROM memories WHERE n = ANY(%s)", (ids,))
        return {int(r[0]): memory_from_row(r[1:]) for r in rows}


@functools.lru_cache(maxsize=4)
def open_pg_memory(url: str) -> PostgresMemoryStore:
    """The memory store at `url`, opened once per process (its pool serves every thread)."""
    _opened.append(PostgresMemoryStore(url))
    return _opened[-1]


_opened: list[PostgresMemoryStore] = []


def forget_open_memories() -> None:
    """Close the stores `open_pg_memory` opened (tests, before dropping their database)."""
    for store in _opened:
        store.close()
    _opened.clear()
    open_pg_memory.cache_clear()
