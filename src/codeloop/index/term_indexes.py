"""The two BM25 indexes of a repository, its chunks and its whole files, kept in step with
its store: loaded from disk and reconciled, changed file by file, or rebuilt in bulk.

A sweep over a cold index feeds base-index builders directly (`bulk`); a search before it
ends gets a snapshot of what they hold (`searchable`). A sweep that changes more files than
the in-memory overlay takes (a checkout moved to another commit) leaves the indexes alone
(`deferred`) and rebuilds them once at its end.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import sqlite3
import time
from collections.abc import Iterable
from pathlib import Path

from codeloop.index.analyse import chunk_terms, decode
from codeloop.index.chunks import Chunk
from codeloop.index.lexical import LexicalBuilder, LexicalIndex
from codeloop.index.terms import path_terms, split_identifier, terms
from codeloop.workspace.errors import UnsafePath
from codeloop.workspace.hostfs import SafeRoot

# A search during a cold build re-takes the snapshot of the documents so far at most this
# often: each costs ~0.1 s on sympy's 48k chunks, and one per search (one a second in the
# benchmark) left a 1 GB heap behind.
SNAPSHOT_EVERY_S = 5.0

# File version (content hash) -> its chunks' terms and its file terms, kept from one rebuild
# to the next when a caller turns it on (`keep_tokens_between_rebuilds`): a process that
# moves one checkout from commit to commit (the localisation benchmark) then re-tokenises
# only the files that changed, not the whole tree. Off by default: it holds every file's
# terms in memory (~3x the index on sympy).
_kept_tokens: dict[str, tuple[list[list[str]], list[str]]] | None = None


# The `meta` row with `_chunks_key` as the saved indexes were built: when the store still
# has it, nothing changed since and the open does not reconcile (~0.1 s of CPU on sympy).
_BASE_KEY = "lexical_base"


def keep_tokens_between_rebuilds(keep: bool = True) -> None:
    """Keep each file version's terms in memory across rebuilds (see `_kept_tokens`)."""
    global _kept_tokens
    _kept_tokens = {} if keep else None


class TermIndexes:
    """Chunk and file BM25 indexes over the store `db` of the tree at `root`, saved in `directory`."""

    def __init__(self, root: Path, directory: Path, db: sqlite3.Connection) -> None:
        self.root, self.dir, self.db = root, directory, db
        self.tree = SafeRoot(root)
        self.chunks = LexicalIndex()
        self.files = LexicalIndex()
        self._bulk: tuple[LexicalBuilder, LexicalBuilder] | None = None
        self._bulk_dirty = False  # a file was removed during the bulk build
        self._snapshot_docs = 0
        self._snapshot_at = 0.0
        self._deferred = False

    # --- a sweep ------------------------------------------------------------------------

    def begin_sweep(self, changes: int) -> None:
        """Before a sweep that will look at `changes` files."""
        if len(self.chunks) == 0 and len(self.files) == 0:
            self._bulk = (LexicalBuilder(), LexicalBuilder())
            self._bulk_dirty, self._snapshot_docs, self._snapshot_at = False, 0, 0.0
        else:
            self._deferred = self.files.needs_rebuild(changes)

    def abort_sweep(self) -> None:
        self._bulk, self._deferred = None, False

    def end_sweep(self) -> bool:
        """Build or rebuild what the sweep left to its end; whether anything was rebuilt."""
        bulk, self._bulk = self._bulk, None
        deferred, self._deferred = self._deferred, False
        if bulk is not None and self._bulk_dirty:
            # A file re-indexed during the build left its old documents in the builders.
            self.rebuild()
            return True
        if bulk is not None and len(bulk[0]):
            self._build(*bulk)
            return True
        if deferred or self.chunks.needs_rebuild() or self.files.needs_rebuild():
            self.rebuild()
            return True
        return False

    # --- one file -----------------------------------------------------------------------

    def add(self, rel: str, chunk_docs: Iterable[tuple[str, list[str]]], file_terms: list[str]) -> None:
        """Index a file's chunks (by store id) and its whole text."""
        if self._bulk is not None:
            for key, toks in chunk_docs:
                self._bulk[0].add(key, toks)
            self._bulk[1].add(rel, file_terms)
        elif not self._deferred:
            for key, toks in chunk_docs:
                self.chunks.add(key, toks)
            self.files.add(rel, file_terms)

    def searchable(self) -> tuple[LexicalIndex, LexicalIndex]:
        """The chunk and file indexes to search now: during a cold build, a snapshot of the
        documents committed so far (the caller holds the index's lock, so no batch is half
        in), re-taken when more have come and `SNAPSHOT_EVERY_S` has passed."""
        bulk = self._bulk
        if (bulk is not None and len(bulk[0]) != self._snapshot_docs
                and time.monotonic() - self._snapshot_at >= SNAPSHOT_EVERY_S):
            self.chunks = self.files = LexicalIndex()  # the old one goes first
            self.chunks = LexicalIndex.snapshot(bulk[0])
            self.files = LexicalIndex.snapshot(bulk[1])
            self._snapshot_docs, self._snapshot_at = len(bulk[0]), time.monotonic()
            trim_heap()
        return self.chunks, self.files

    def remove(self, rel: str, chunk_ids: Iterable[int]) -> None:
        if self._deferred:
            return
        if self._bulk is not None:
            self._bulk_dirty = True
        self.chunks.remove_many(str(chunk_id) for chunk_id in chunk_ids)
        self.files.remove(rel)

    # --- whole indexes ------------------------------------------------------------------

    def load(self) -> None:
        """Take the saved indexes, brought up to date with the store; rebuild when missing."""
        chunks = LexicalIndex.load(self.dir / "chunks")
        files = LexicalIndex.load(self.dir / "files")
        if chunks is None or files is None:
            if self.db.execute("SELECT 1 FROM chunks LIMIT 1").fetchone():
                self.rebuild()
            return
        self.chunks, self.files = chunks, files
        recorded = self.db.execute("SELECT value FROM meta WHERE key=?", (_BASE_KEY,)).fetchone()
        if recorded is None or recorded[0] != self._chunks_key():
            self._reconcile()
        if self.chunks.needs_rebuild() or self.files.needs_rebuild():
            self.rebuild()

    def rebuild(self) -> None:
        by_path = _by_path(self._chunk_rows())
        chunk_docs, file_docs = LexicalBuilder(), LexicalBuilder()
        for _path, docs in self._tokens_from_disk(by_path):
            for key, toks in docs[:-1]:
                chunk_docs.add(key, toks)
            file_docs.add(*docs[-1])
        # A file that could not be read is not in the indexes: the next open reconciles.
        complete = len(file_docs) == len(by_path)
        del by_path
        self._build(chunk_docs, file_docs, complete)

    def _build(self, chunk_docs: LexicalBuilder, file_docs: LexicalBuilder,
               complete: bool = True) -> None:
        self.chunks = LexicalIndex()
        self.chunks.adopt(chunk_docs)
        self.files = LexicalIndex()
        self.files.adopt(file_docs)
        self.chunks.save(self.dir / "chunks")
        self.files.save(self.dir / "files")
        # After the files: a crash between them leaves the old key, and a reconcile.
        if complete:
            self.db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)",
                            (_BASE_KEY, self._chunks_key()))
        else:
            self.db.execute("DELETE FROM meta WHERE key=?", (_BASE_KEY,))
        release_free_memory()

    def _chunks_key(self) -> str:
        """The chunk table's highest id and row count: chunk ids are never reused
        (AUTOINCREMENT), so the same pair means no chunk was added or removed since."""
        top, count = self.db.execute("SELECT MAX(id), COUNT(*) FROM chunks").fetchone()
        return f"{top}:{count}"

    def _reconcile(self) -> None:
        """Mask base documents that no longer exist and overlay the ones added since the build."""
        # Ids and paths only: every chunk's full row (~50k on sympy) cost ~0.1 s of CPU at
        # each open, and only the files added since the build need theirs.
        rows = [(str(i), str(p)) for i, p in self.db.execute("SELECT id, path FROM chunks")]
        base_chunks = set(self.chunks.base_keys())
        gone_chunks = base_chunks - {k for k, _ in rows}
        self.chunks.remove_many(gone_chunks)
        base_files = set(self.files.base_keys())
        gone_files = base_files - {p for _, p in rows}
        self.files.remove_many(gone_files)
        fresh_paths = {p for k, p in rows if k not in base_chunks} | \
            {p for _, p in rows if p not in base_files}
        if not (gone_chunks or gone_files or fresh_paths):
            # The saved indexes are the store's (one saved before the key was kept): say so.
            self.db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)",
                            (_BASE_KEY, self._chunks_key()))
        fresh = _by_path([r for path in sorted(fresh_paths) for r in self._chunk_rows(path)])
        for path, docs in self._tokens_from_disk(fresh):
            for key, toks in docs:
                self.chunks.add(key, toks) if key != path else self.files.add(key, toks)

    def _chunk_rows(self, path: str | None = None) -> list[tuple[str, str, Chunk]]:
        """(key, path, chunk) of every chunk, or of one file's, in path and line order."""
        sql = "SELECT id, path, start_line, end_line, symbol FROM chunks "
        rows = self.db.execute(sql + "ORDER BY path, start_line") if path is None else \
            self.db.execute(sql + "WHERE path=? ORDER BY start_line", (path,))
        return [(str(i), str(p), Chunk(int(s), int(e), str(sym))) for i, p, s, e, sym in rows]

    def _tokens_from_disk(self, by_path: dict[str, list[tuple[str, Chunk]]]
                          ) -> Iterable[tuple[str, list[tuple[str, list[str]]]]]:
        """Per file: (chunk key, terms) for each chunk, then (path, file terms)."""
        kept = _kept_tokens
        hashes: dict[str, str] = {}
        if kept is not None:
            hashes = {str(p): str(h) for p, h in self.db.execute("SELECT path, hash FROM files")}
        used: dict[str, tuple[list[list[str]], list[str]]] = {}
        for path, chunks in by_path.items():
            version = f"{path}\0{hashes.get(path, '')}"
            if kept is not None and version in kept and len(kept[version][0]) == len(chunks):
                chunk_toks, file_terms = kept[version]
            else:
                try:
                    lines = decode(self.tree.read_bytes(path)).splitlines()
                except (OSError, UnsafePath):
                    continue
                prefix = path_terms(path)
                chunk_toks = [chunk_terms(path, lines, c, prefix) for _key, c in chunks]
                names = [str(r[0]) for r in
                         self.db.execute("SELECT name FROM defs WHERE path=?", (path,))]
                file_terms = prefix * 2 + [t for n in names for t in terms(n)]
                for toks in chunk_toks:
                    file_terms.extend(toks[len(prefix):])
            if kept is not None:
                used[version] = (chunk_toks, file_terms)
            docs = [(key, toks) for (key, _c), toks in zip(chunks, chunk_toks, strict=True)]
            yield path, [*docs, (path, file_terms)]
        if kept is not None and len(used) == len(by_path):  # a whole rebuild: keep this tree
            kept.clear()
            kept.update(used)
        elif kept is not None:
            kept.update(used)


def release_free_memory() -> None:
    """Hand memory freed after a build back to the OS: the identifier-split cache filled by
    tokenising every file, and the free heap the build's term lists leave behind (glibc
    keeps it unless asked to trim)."""
    split_identifier.cache_clear()
    gc.collect()
    trim_heap()


def trim_heap() -> None:
    """Give the free heap back to the OS (glibc keeps it unless asked)."""
    # Not glibc (macOS, musl): nothing to trim, only a higher resident size.
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)


def _by_path(rows: list[tuple[str, str, Chunk]]) -> dict[str, list[tuple[str, Chunk]]]:
    by_path: dict[str, list[tuple[str, Chunk]]] = {}
    for key, path, chunk in rows:
        by_path.setdefault(path, []).append((key, chunk))
    return by_path
