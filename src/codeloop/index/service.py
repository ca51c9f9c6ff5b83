"""`RepoIndex`: one repository's index, kept fresh, that never serves stale content.

Freshness: a sweep (`sweep.run_sweep`) compares every file's (mtime, size) with the index
and hashes only the files whose stat changed; only files whose hash changed are re-parsed.
A sweep runs on `update()`, when git's HEAD moves (checkout, rebase), and at most every
`sweep_interval` seconds before a query (on a background thread for `open_index`, so no
query waits for the walk). It commits a batch of files at a time, so queries during a long
build answer from what is indexed so far (`progress()` says how far). `notify_changed`
re-indexes named files at once (the loop calls it after an edit; the watcher calls it on
file events). Independently of all that, every hit is checked against the file on disk (its
hash) before it is returned; a stale hit re-indexes the file and the query is run again.
"""

from __future__ import annotations

import shutil
import sqlite3
import stat
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TypeVar

from codeloop.index import store
from codeloop.index.definitions import SQL_BATCH, Definitions
from codeloop.index.derived import DerivedStructures
from codeloop.index.graph import FileGraph, files_defining
from codeloop.index.heap import return_large_frees
from codeloop.index.history import CommitSearch, git_head
from codeloop.index.hits import ChunkHit, ReferenceHit, SymbolHit, UpdateStats
from codeloop.index.lines import RecentLines, stat_key
from codeloop.index.memos import Memos
from codeloop.index.path_tables import KeysOf
from codeloop.index.readers import ReaderPriority
from codeloop.index.sweep import BuildProgress, SweepTarget, run_sweep
from codeloop.index.term_indexes import TermIndexes
from codeloop.index.terms import query_terms
from codeloop.index.walker import is_ignored
from codeloop.index.writer import Change, IndexWriter, parse
from codeloop.workspace.errors import UnsafePath
from codeloop.workspace.hostfs import SafeRoot

SWEEP_INTERVAL_S = 5.0
_MAX_RETRIES = 2
T = TypeVar("T")


class RepoIndex:
    """The index of one directory, stored under the cache dir (see `store.index_dir`).

    Every read and write of `db` holds `_lock`; a sweep holds it per committed batch only."""

    def __init__(self, root: Path, cache: Path | None = None,
                 sweep_interval: float = SWEEP_INTERVAL_S, background_sweeps: bool = False,
                 seed: Path | None = None) -> None:
        return_large_frees()  # the index's rebuilt arrays would otherwise stay resident
        self.root = root.resolve()
        # Every read of the tree goes through here: a link in it is never followed.
        self.fs = SafeRoot(self.root)
        self.seed = seed
        self.background_sweeps = background_sweeps
        self._sweeper: threading.Thread | None = None
        self.dir = store.index_dir(self.root, cache)
        self.db = store.connect(self.dir / "index.sqlite")
        store.record_origin(self.dir, self.root, seed)
        self.sweep_interval = sweep_interval
        self._lock = threading.RLock()
        self._sweeping = threading.Lock()  # one sweep at a time
        self._terms = TermIndexes(self.root, self.dir, self.db)
        self._memos = Memos(self.db, self._lock)
        self._writer = IndexWriter(self.db, self._terms, self._changed, self._memos.rolled_back)
        self._priority = ReaderPriority()
        # Public so a test can hold a build after a batch (`after_batch`).
        self.sweeps = SweepTarget(self.fs, self.db, self._terms, self._writer, self._lock,
                                  pause=self._priority.pause)
        # Derived tables kept across edits (each rebuilt in full took ~0.75 s of CPU on
        # sympy, in the first context refresh after every edit): the graph gets the edited
        # files' edges again, the definitions their rows; path memos only change with paths.
        # The graph and the commit search are also saved in the store for the next open.
        self._definitions = Definitions()
        self._generation = 0
        self._lines = RecentLines()
        self._last_sweep = 0.0
        self._head = git_head(self.root)
        # A copied workspace has no .git of its own: its history is its source's.
        history_root = seed if self._head is None and seed is not None else self.root
        self.derived = DerivedStructures(self.db, self._lock, history_root)
        self._terms.load()

    def close(self, save: bool = True) -> None:
        """Close the store, saving the graph first if edits changed it (`save`: not for an
        index about to be deleted)."""
        if self._sweeper is not None:
            self._sweeper.join()
        with self._sweeping, self._lock:
            if save:
                self.save_derived()
            self.db.close()

    # --- freshness ----------------------------------------------------------------------

    def update(self) -> UpdateStats:
        """Sweep the whole tree: add, re-index and drop files so the index matches the disk."""
        with self._sweeping:
            stats = run_sweep(self.root, self.sweeps)
            self._last_sweep = time.monotonic()
            self._head = git_head(self.root)
            return stats

    @property
    def swept(self) -> bool:
        """Whether a sweep has run since the index was opened."""
        return self._last_sweep > 0

    def progress(self) -> BuildProgress | None:
        """How far the build under way is; None when the index is complete."""
        with self._lock:
            return self.sweeps.progress

    def reading(self) -> AbstractContextManager[None]:
        """Mark a foreground read (a tool call, a context build): a sweep on another thread
        pauses at its next step until it ends (see `readers`)."""
        return self._priority.reading()

    def ensure_fresh(self) -> None:
        """Sweep now if HEAD moved; sweep (in the background if so configured) when the last
        sweep is older than `sweep_interval`. Served hits are hash-checked either way."""
        if self._sweeping.locked():
            return  # a sweep is under way: queries answer from its committed batches
        if git_head(self.root) != self._head:
            self.update()
        elif time.monotonic() - self._last_sweep > self.sweep_interval:
            if not self.background_sweeps:
                self.update()
            elif self._sweeper is None or not self._sweeper.is_alive():
                self._last_sweep = time.monotonic()
                self._sweeper = threading.Thread(target=self.update, daemon=True,
                                                 name="codeloop-index-sweep")
                self._sweeper.start()

    def notify_changed(self, paths: Iterable[str]) -> None:
        """Re-index these files now (relative paths; a missing file is dropped)."""
        with self._lock:
            self.db.execute("BEGIN")
            try:
                for rel in paths:
                    old = self._writer.current_hash(rel)
                    if is_ignored(self.root, rel):
                        if old is not None:
                            self._writer.drop(rel)
                        continue
                    self._writer.apply(rel, old, parse(self.fs, rel, old))
                self.db.execute("COMMIT")
            except BaseException:
                self._writer.rollback()
                raise

    def copy_to(self, directory: Path) -> None:
        """Copy the index (store, saved term indexes, vectors) into a new `directory`: the
        store through SQLite's backup, the rest as files, with no write between them."""
        with self._lock:
            self.save_derived()
            shutil.copytree(self.dir, directory, ignore=shutil.ignore_patterns(
                "index.sqlite*", store.ORIGIN_FILE, ".*"))
            copy = sqlite3.connect(str(directory / "index.sqlite"))
            try:
                self.db.backup(copy)
            finally:
                copy.close()

    def _changed(self, rel: str, change: Change) -> None:
        """After a file's rows changed (under the lock): drop or mark what derives from them."""
        self._generation += 1
        self._definitions.edited(rel)
        self._memos.changed(rel, change)
        self.derived.changed(rel, change)

    def memo(self, name: str, factory: Callable[[], T]) -> T:
        """A value derived from the index, cached until the next change (of the set of
        paths, for the path memos)."""
        return self._memos.get(name, factory)

    # --- serving (every result is checked against the disk first) -----------------------

    def _current(self, rel: str) -> tuple[bool, Sequence[str]]:
        """(fresh, lines): whether the indexed hash still matches the file, and its lines.
        A file with the stat it had when last hashed is not read again (see `lines`)."""
        with self._lock:
            row = self.db.execute("SELECT hash FROM files WHERE path=?", (rel,)).fetchone()
        try:
            st = self.fs.lstat(rel)
            if st is None or not stat.S_ISREG(st.st_mode):
                return False, []
            key = stat_key(st)
            known = self._lines.known(rel, key)
            if known is not None:
                return row is not None and known[0] == row[0], known[1]
            data = self.fs.read_bytes(rel)
        except (OSError, UnsafePath):
            return False, []
        digest = store.content_hash(data)
        return row is not None and digest == row[0], self._lines.split(rel, digest, data, key)

    def _serve(self, produce: Callable[[], list[T]], path_of: Callable[[T], str],
               finish: Callable[[T, Sequence[str]], T | None]) -> list[T]:
        """Run a query, re-indexing stale files and re-running until every hit is fresh."""
        self.ensure_fresh()
        with self._lock:
            for attempt in range(_MAX_RETRIES + 1):
                hits = produce()
                out: list[T] = []
                stale: list[str] = []
                cache: dict[str, tuple[bool, Sequence[str]]] = {}
                for hit in hits:
                    path = path_of(hit)
                    if path not in cache:
                        cache[path] = self._current(path)
                    fresh, lines = cache[path]
                    if not fresh:
                        stale.append(path)
                        continue
                    done = finish(hit, lines)
                    if done is not None:
                        out.append(done)
                if not stale or attempt == _MAX_RETRIES:
                    return out
                self.notify_changed(dict.fromkeys(stale))
            return []

    def search(self, query: str, limit: int = 10, verify: bool = True) -> list[ChunkHit]:
        """The chunks that best match `query` (BM25 over code-aware terms). With
        `verify=False` hits carry no text and skip the disk check: for ranking only."""
        q = list(query_terms(query))

        def produce() -> list[ChunkHit]:
            found = self._terms.searchable()[0].search(q, limit)
            if not found:
                return []
            scores = {int(k): s for k, s in found}
            marks = ",".join("?" * len(scores))
            rows = self.db.execute(f"SELECT id, path, start_line, end_line, symbol FROM chunks "
                                   f"WHERE id IN ({marks})", list(scores)).fetchall()
            hits = [ChunkHit(p, s, e, sym, scores[i], "") for i, p, s, e, sym in rows]
            return sorted(hits, key=lambda h: (-h.score, h.path, h.start_line))

        def finish(hit: ChunkHit, lines: Sequence[str]) -> ChunkHit:
            text = "\n".join(lines[hit.start_line - 1:hit.end_line])
            return ChunkHit(hit.path, hit.start_line, hit.end_line, hit.symbol, hit.score, text)

        if not verify:
            self.ensure_fresh()
            with self._lock:
                return produce()
        return self._serve(produce, lambda h: h.path, finish)

    def rank_files_lexical(self, query: str, limit: int = 50) -> list[tuple[str, float]]:
        """Files by BM25 over their whole text (no freshness check: paths, not content)."""
        self.ensure_fresh()
        with self._lock:
            return self._terms.searchable()[1].search(list(query_terms(query)), limit)

    def find_symbol(self, name: str, limit: int = 50) -> list[SymbolHit]:
        """Definitions named `name` (or `Parent.name`); exact first, then prefix matches."""
        parent, _, short = name.rpartition(".")

        def produce() -> list[SymbolHit]:
            sql = "SELECT path, name, kind, start_line, end_line, signature, parent FROM defs "
            if parent:
                rows = self.db.execute(sql + "WHERE name=? AND parent=? LIMIT ?",
                                       (short, parent, limit)).fetchall()
            else:
                rows = self.db.execute(sql + "WHERE name=? LIMIT ?", (short, limit)).fetchall()
                if not rows:
                    rows = self.db.execute(sql + "WHERE name LIKE ? ESCAPE '\\' LIMIT ?",
                                           (_like_prefix(short), limit)).fetchall()
            hits = [SymbolHit(*r) for r in rows]
            return sorted(hits, key=lambda h: (h.name != short, h.path, h.start_line))

        def finish(hit: SymbolHit, lines: Sequence[str]) -> SymbolHit | None:
            return hit if hit.start_line <= len(lines) else None

        return self._serve(produce, lambda h: h.path, finish)

    def find_references(self, name: str, limit: int = 100) -> list[ReferenceHit]:
        """Places that call or name `name`, with the line's text."""
        short = name.rpartition(".")[2]

        def produce() -> list[ReferenceHit]:
            rows = self.db.execute("SELECT path, line FROM refs WHERE name=? "
                                   "ORDER BY path, line LIMIT ?", (short, limit)).fetchall()
            return [ReferenceHit(str(p), int(ln), short, "") for p, ln in rows]

        def finish(hit: ReferenceHit, lines: Sequence[str]) -> ReferenceHit | None:
            if hit.line > len(lines):
                return None
            return ReferenceHit(hit.path, hit.line, hit.name, lines[hit.line - 1])

        return self._serve(produce, lambda h: h.path, finish)

    def fresh_lines(self, rel: str) -> Sequence[str] | None:
        """A file's lines if the index still matches it, else None (nothing re-indexed)."""
        fresh, lines = self._current(rel)
        return lines if fresh else None

    def read_lines(self, rel: str) -> Sequence[str] | None:
        """A file's current lines, re-indexing it first if it changed; None if it is gone."""
        fresh, lines = self._current(rel)
        if not fresh:
            self.notify_changed([rel])
            fresh, lines = self._current(rel)
        return lines if fresh else None

    # --- structure ----------------------------------------------------------------------

    def graph(self) -> FileGraph:
        """The file graph: from the store when saved for these files, else built."""
        return self.derived.graph()

    def save_derived(self) -> None:
        """Save the graph if edits changed it since it was loaded or saved (the next open,
        or a copy of this index, then starts from it)."""
        self.derived.save()

    def commit_search(self) -> CommitSearch:
        """Search over recent commit messages, rebuilt when git HEAD moves (`derived`)."""
        return self.derived.commit_search()

    @property
    def graph_origin(self) -> str | None:
        return self.derived.graph_origin

    @property
    def history_origin(self) -> str | None:
        return self.derived.history_origin

    def definitions_in(self, paths: list[str]) -> dict[str, list[SymbolHit]]:
        """Each path's definitions in line order (`definitions.Definitions`)."""
        with self._lock:
            return self._definitions.lookup(self.db, paths)

    def preload_definitions(self) -> None:
        """Load every file's definitions, a batch per hold of the lock: after the first task
        context (later ones, for other files, then load none: ~10 ms of each on sympy)."""
        paths = self.paths()
        for i in range(0, len(paths), SQL_BATCH):
            self.definitions_in(paths[i:i + SQL_BATCH])

    def expand_vocabularies(self) -> None:
        """Make the BM25 indexes' term lookups dicts (see `LexicalIndex.expand_vocab`)."""
        with self._lock:
            indexes = self._terms.searchable()
        for index in indexes:  # outside the lock: a search meanwhile uses the saved one
            index.expand_vocab()

    def files_defining(self, names: Iterable[str]) -> dict[str, list[str]]:
        """Each name's defining files, in path order (none for a name nothing defines)."""
        wanted = set(names)
        with self._lock:
            # A long issue text names hundreds of words: a few IN queries, not one per word.
            found = files_defining(self.db, wanted)
        return {name: sorted(found.get(name, [])) for name in sorted(wanted)}

    def file_sizes(self) -> dict[str, tuple[int, int]]:
        """Each indexed file's (chunks, definitions): how much of the repository it holds."""
        def load() -> dict[str, tuple[int, int]]:
            with self._lock:
                chunks = dict(self.db.execute("SELECT path, COUNT(*) FROM chunks GROUP BY path"))
                defs = dict(self.db.execute("SELECT path, COUNT(*) FROM defs GROUP BY path"))
            return {str(p): (int(n), int(defs.get(p, 0))) for p, n in chunks.items()}
        return self.memo("file_sizes", load)

    def paths(self) -> list[str]:
        return self._memos.paths()

    def path_table(self, name: str, keys_of: KeysOf) -> dict[str, list[str]]:
        """The indexed paths grouped under the keys `keys_of` gives each (`path_tables`),
        in path order; kept up to date as files come and go. Read it, never change it."""
        return self._memos.table(name, keys_of)

    def stats(self) -> dict[str, int]:
        def count(sql: str) -> int:
            with self._lock:
                row = self.db.execute(sql).fetchone()
            return int(row[0]) if row else 0
        return {
            "files": count("SELECT COUNT(*) FROM files WHERE indexed=1"),
            "skipped_files": count("SELECT COUNT(*) FROM files WHERE indexed=0"),
            "chunks": count("SELECT COUNT(*) FROM chunks"),
            "definitions": count("SELECT COUNT(*) FROM defs"),
            "references": count("SELECT COUNT(*) FROM refs"),
            "imports": count("SELECT COUNT(*) FROM imports"),
        }


def _like_prefix(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
