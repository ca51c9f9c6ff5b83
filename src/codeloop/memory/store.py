"""The memory store: one SQLite file beside the event log (`memory.sqlite`, mode 0600).

Text is searched with FTS5's BM25 over code-aware terms (`index.terms`) and, when the
`embeddings` extra is installed and on (`CODELOOP_EMBEDDINGS`), fused with cosine
similarity of model2vec vectors. What `forget` deletes is gone from the file: the row, its
FTS terms and its vector are deleted, `secure_delete` zeroes the freed pages, FTS segments
are merged, the file is vacuumed and the WAL truncated. Nothing is ever only marked deleted.
"""

from __future__ import annotations

import functools
import secrets
import sqlite3
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Protocol

from codeloop.errors import StoreError
from codeloop.index.embeddings import EmbeddingsUnavailable
from codeloop.index.terms import terms
from codeloop.memory import ranking, vectors
from codeloop.memory.owners import MERGED_OWNERS
from codeloop.memory.records import DEFAULT_TTL_S, Hit, Memory, MemoryNotFound, NewMemory
from codeloop.memory.stems import TOKENIZER
from codeloop.private_paths import FILE_MODE, private_dir, private_file, tighten
from codeloop.sqlite_local import ThreadConnections

# Candidates fetched per wanted hit before `ranking` reorders and cuts them.
CANDIDATES_PER_HIT = 4


class MemoryStore(Protocol):
    """What sessions, the CLI and the server need of a memory store (SQLite here, PostgreSQL
    in store_pg.py)."""

    # Whether it embeds memories (the `embeddings` extra, on): recall may then use vectors.
    use_vectors: bool

    def add(self, new: NewMemory) -> Memory | None:
        """Store it; None when a capture with the same key is already stored."""
        ...

    def get(self, memory_id: str, user: str) -> Memory:
        """One memory (an id or a unique prefix) `user` may see; else MemoryNotFound."""
        ...

    def listing(self, user: str, repo: str | None = None) -> list[Memory]:
        """`user`'s memories and the team memories (of `repo`, or of every repository when
        None: the caller keeps those of repositories the user may open), newest first."""
        ...

    def recall(self, user: str, repo: str, query: str, k: int, *,
               vectors: bool = True) -> list[Hit]:
        """The memories visible to `user` working on `repo` that best match `query`
        (`vectors=False`: by words alone, even where the store embeds)."""
        ...

    def mark_used(self, ids: Sequence[str]) -> None:
        """Mark memories as used now (their time to live starts again)."""
        ...

    def forget(self, ids: Sequence[str], user: str) -> list[str]:
        """Delete `user`'s own memories for good; returns the ids deleted."""
        ...


_SCHEMA = """
CREATE TABLE IF NOT EXISTS memories (
    n INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    user TEXT NOT NULL,
    kind TEXT NOT NULL,
    scope TEXT NOT NULL,
    repo TEXT NOT NULL DEFAULT '',
    text TEXT NOT NULL,
    source TEXT NOT NULL,
    session_id TEXT NOT NULL DEFAULT '',
    event_seq INTEGER NOT NULL DEFAULT 0,
    created REAL NOT NULL,
    last_used REAL NOT NULL,
    ttl_s REAL NOT NULL,
    uses INTEGER NOT NULL DEFAULT 0,
    capture_key TEXT UNIQUE
);
CREATE INDEX IF NOT EXISTS memories_owner ON memories(user, repo);
CREATE INDEX IF NOT EXISTS memories_team ON memories(scope, repo);
CREATE VIRTUAL TABLE IF NOT EXISTS memory_fts USING fts5(terms, tokenize="{TOKENIZER}");
CREATE TABLE IF NOT EXISTS memory_vectors (n INTEGER PRIMARY KEY, vector BLOB NOT NULL);
""".replace("{TOKENIZER}", TOKENIZER)
_COLUMNS = ("id, user, kind, scope, text, source, repo, session_id, event_seq, created, "
            "last_used, ttl_s, uses")
# Who sees what: a user's own memories of their scope, and a repository's team memories.
_VISIBLE = ("((m.user = :user AND (m.scope = 'user' OR (m.scope = 'repo' AND m.repo = :repo)))"
            " OR (m.scope = 'team' AND m.repo = :repo)) AND m.last_used + m.ttl_s > :now")


def memory_from_row(row: Sequence[object]) -> Memory:
    (mid, user, kind, scope, text, source, repo, sid, seq, created, used, ttl, uses) = row
    return Memory(id=str(mid), user=str(user), kind=kind, scope=scope,  # type: ignore[arg-type]
                  text=str(text), source=source, repo=str(repo),  # type: ignore[arg-type]
                  session_id=str(sid), event_seq=int(seq),  # type: ignore[call-overload]
                  created=float(created), last_used=float(used),  # type: ignore[arg-type]
                  ttl_s=float(ttl), uses=int(uses))  # type: ignore[arg-type, call-overload]


def clean_id(memory_id: str) -> str:
    """A memory id or prefix as typed, reduced to what ids are made of (never SQL syntax)."""
    memory_id = "".join(c for c in memory_id if c.isalnum())
    if len(memory_id) < 3:
        raise MemoryNotFound("a memory id has at least 3 characters",
                             "list them with `codeloop memory list --all`")
    return memory_id


def pick(memory_id: str, found: list[Memory]) -> Memory:
    """The memory an id or unique prefix names among those it matched."""
    exact = [m for m in found if m.id == memory_id]
    if len(exact) == 1 or len(found) == 1:
        return exact[0] if exact else found[0]
    raise MemoryNotFound(f"no memory {memory_id!r}" if not found else
                         f"{memory_id!r} names {len(found)} memories",
                         "list them with `codeloop memory list --all`")


class RankedRecall:
    """Recall shared by the stores: a backend finds lexical and semantic candidates among
    the memories `user` may see on `repo`; the ranking that fuses them lives here, once."""

    use_vectors: bool

    def _lexical(self, query: str, params: dict[str, object], limit: int) -> dict[int, float]:
        """rowid -> BM25 score (higher is better) of the visible memories matching a term."""
        raise NotImplementedError

    def _semantic(self, query: str, params: dict[str, object], limit: int) -> dict[int, float]:
        """rowid -> cosine similarity of the visible memories nearest the query."""
        raise NotImplementedError

    def _rows(self, rowids: Iterable[int]) -> dict[int, Memory]:
        raise NotImplementedError

    def recall(self, user: str, repo: str, query: str, k: int, *,
               vectors: bool = True) -> list[Hit]:
        if k <= 0 or not query.strip():
            return []
        params = {"user": user, "repo": repo, "now": time.time()}
        limit = k * CANDIDATES_PER_HIT
        use_vectors = self.use_vectors and vectors
        lexical = self._lexical(query, params, limit)
        semantic: dict[int, float] = {}
        if use_vectors:
            try:
                semantic = self._semantic(query, params, limit)
            except EmbeddingsUnavailable:  # the model would not load: by words alone
                use_vectors = False
        found = self._rows(set(lexical) | set(semantic))
        candidates = [ranking.Candidate(memory, lexical.get(n, 0.0), semantic.get(n, 0.0),
                                        n in lexical) for n, memory in found.items()]
        return ranking.rank(query, candidates, k, use_vectors)


def new_id() -> str:
    return "m" + secrets.token_hex(5)


class SQLiteMemoryStore(RankedRecall):
    """Every user's memories in one file; rows carry their owner and repository."""

    def __init__(self, path: Path, *, use_vectors: bool | None = None) -> None:
        self.path = path
        self.use_vectors = vectors.wanted() if use_vectors is None else use_vectors
        # Freed pages are overwritten with zeros: a deleted memory leaves no text behind.
        self._conns = ThreadConnections(path, ["secure_delete=ON"])
        try:
            # Memories quote what people said about their code: only their owner may read them.
            private_dir(path.parent)
            private_file(path)
            self._conn().executescript(_SCHEMA)
            for suffix in ("-wal", "-shm"):
                tighten(path.with_name(path.name + suffix), FILE_MODE)
            self._purge_expired()
            self._merge_owners()
        except (sqlite3.Error, OSError) as exc:
            raise StoreError(
                f"cannot open the memory store at {path}: {exc}",
                "check the file's permissions and free disk space, or set CODELOOP_DATA_DIR",
            ) from exc

    def _conn(self) -> sqlite3.Connection:
        return self._conns.get()

    # -- writing ----------------------------------------------------------------------------

    def add(self, new: NewMemory) -> Memory | None:
        now = time.time()
        ttl = new.ttl_s if new.ttl_s is not None else DEFAULT_TTL_S[new.kind]
        repo = "" if new.scope == "user" else new.repo
        conn = self._conn()
        conn.execute("BEGIN IMMEDIATE")
        try:
            cur = conn.execute(
                "INSERT OR IGNORE INTO memories (id, user, kind, scope, repo, text, source, "
                "session_id, event_seq, created, last_used, ttl_s, capture_key) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (new_id(), new.user, new.kind, new.scope, repo, new.text, new.source,
                 new.session_id, new.event_seq, now, now, ttl, new.capture_key))
            if cur.rowcount == 0:
                conn.execute("ROLLBACK")
                return None
            n = cur.lastrowid
            conn.execute("INSERT INTO memory_fts (rowid, terms) VALUES (?, ?)",
                         (n, " ".join(terms(new.text))))
            if self.use_vectors and vectors.ready():
                conn.execute("INSERT INTO memory_vectors (n, vector) VALUES (?, ?)",
                             (n, vectors.to_blob(vectors.encode([new.text])[0])))
            row = conn.execute(f"SELECT {_COLUMNS} FROM memories WHERE n = ?", (n,)).fetchone()
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        return memory_from_row(row)

    def mark_used(self, ids: Sequence[str]) -> None:
        if not ids:
            return
        marks = ", ".join("?" for _ in ids)
        self._conn().execute(
            f"UPDATE memories SET last_used = ?, uses = uses + 1 WHERE id IN ({marks})",
            (time.time(), *ids))

    def forget(self, ids: Sequence[str], user: str) -> list[str]:
        if not ids:
            return []
        marks = ", ".join("?" for _ in ids)
        rows = self._conn().execute(
            f"SELECT n, id FROM memories WHERE user = ? AND id IN ({marks})",
            (user, *ids)).fetchall()
        self._delete([int(n) for n, _ in rows], vacuum=True)
        return [str(mid) for _, mid in rows]

    def _merge_owners(self) -> None:
        """Move the rows of owners that are now another's (`owners.MERGED_OWNERS`), first
        dropping those the new owner holds word for word (a person who said it both ways)."""
        conn = self._conn()
        for old, new in MERGED_OWNERS:
            twins = conn.execute(
                "SELECT a.n FROM memories a JOIN memories b ON b.user = ? AND b.kind = a.kind "
                "AND b.scope = a.scope AND b.repo = a.repo AND b.text = a.text "
                "WHERE a.user = ?", (new, old)).fetchall()
            self._delete([int(n) for (n,) in twins], vacuum=False)
            conn.execute("UPDATE memories SET user = ? WHERE user = ?", (new, old))

    def _purge_expired(self) -> None:
        rows = self._conn().execute("SELECT n FROM memories WHERE last_used + ttl_s <= ?",
                                    (time.time(),)).fetchall()
        self._delete([int(n) for (n,) in rows], vacuum=False)

    def _delete(self, rowids: list[int], *, vacuum: bool) -> None:
        """Delete rows, their terms and vectors, and leave none of their bytes in the file."""
        if not rowids:
            return
        conn = self._conn()
        marks = ", ".join("?" for _ in rowids)
        conn.execute("BEGIN IMMEDIATE")
        try:
            for table, key in (("memories", "n"), ("memory_fts", "rowid"),
                               ("memory_vectors", "n")):
                conn.execute(f"DELETE FROM {table} WHERE {key} IN ({marks})", rowids)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        # FTS5 keeps deleted terms in older segments until they are merged into one.
        conn.execute("INSERT INTO memory_fts (memory_fts) VALUES ('optimize')")
        if vacuum:
            conn.execute("VACUUM")
        # The WAL still holds the pages as they were written: copy back and cut it to zero.
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    # -- reading ------------------------------------------------------------------------------

    def get(self, memory_id: str, user: str) -> Memory:
        memory_id = clean_id(memory_id)
        rows = self._conn().execute(
            f"SELECT {_COLUMNS} FROM memories WHERE (id = ? OR id LIKE ?) "
            "AND (user = ? OR scope = 'team')",
            (memory_id, memory_id + "%", user)).fetchall()
        return pick(memory_id, [memory_from_row(r) for r in rows])

    def listing(self, user: str, repo: str | None = None) -> list[Memory]:
        if repo is None:
            where, params = "user = ? OR scope = 'team'", [user]
        else:
            where = ("(user = ? AND (scope = 'user' OR repo = ?)) "
                     "OR (scope = 'team' AND repo = ?)")
            params = [user, repo, repo]
        rows = self._conn().execute(
            f"SELECT {_COLUMNS} FROM memories WHERE ({where}) AND last_used + ttl_s > ? "
            "ORDER BY created DESC", (*params, time.time())).fetchall()
        return [memory_from_row(r) for r in rows]

    def _lexical(self, query: str, params: dict[str, object], limit: int) -> dict[int, float]:
        match = ranking.fts_query(query)
        if not match:
            return {}
        rows = self._conn().execute(
            "SELECT m.n, bm25(memory_fts) FROM memory_fts JOIN memories m "
            f"ON m.n = memory_fts.rowid WHERE memory_fts MATCH :match AND {_VISIBLE} "
            "ORDER BY bm25(memory_fts) LIMIT :limit",
            {**params, "match": match, "limit": limit}).fetchall()
        return {int(n): -float(score) for n, score in rows}

    def _semantic(self, query: str, params: dict[str, object], limit: int) -> dict[int, float]:
        self._backfill_vectors(params)
        rows = self._conn().execute(
            f"SELECT v.n, v.vector FROM memory_vectors v JOIN memories m ON m.n = v.n "
            f"WHERE {_VISIBLE}", params).fetchall()
        return dict(vectors.ranked(vectors.encode([query])[0],
                                   [(int(n), bytes(b)) for n, b in rows], limit))

    def _backfill_vectors(self, params: dict[str, object]) -> None:
        """Vectors for memories stored while embeddings were off."""
        missing = self._conn().execute(
            f"SELECT m.n, m.text FROM memories m LEFT JOIN memory_vectors v ON v.n = m.n "
            f"WHERE v.n IS NULL AND {_VISIBLE}", params).fetchall()
        if missing:
            encoded = vectors.encode([str(t) for _, t in missing])
            self._conn().executemany(
                "INSERT OR REPLACE INTO memory_vectors (n, vector) VALUES (?, ?)",
                [(int(n), vectors.to_blob(v)) for (n, _), v in zip(missing, encoded, strict=True)])

    def _rows(self, rowids: Iterable[int]) -> dict[int, Memory]:
        ids = list(rowids)
        if not ids:
            return {}
        marks = ", ".join("?" for _ in ids)
        rows = self._conn().execute(
            f"SELECT n, {_COLUMNS} FROM memories WHERE n IN ({marks})", ids).fetchall()
        return {int(r[0]): memory_from_row(r[1:]) for r in rows}


def memory_path(data: Path) -> Path:
    """Where a data directory keeps its memory store."""
    return data / "memory.sqlite"


@functools.lru_cache(maxsize=16)
def open_memory(data: Path) -> SQLiteMemoryStore:
    """The memory store of a data directory, opened once per process (its connections are
    per thread)."""
    return SQLiteMemoryStore(memory_path(data))
