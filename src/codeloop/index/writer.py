"""Writing one file's rows: read and parse it (no lock needed), then store the result.

The two halves are apart so a sweep can parse a batch of files while queries run, and hold
the index's lock only while it writes the batch and commits it (see `sweep`).
"""

from __future__ import annotations

import sqlite3
import stat
from collections.abc import Callable
from dataclasses import dataclass

from codeloop.index import store
from codeloop.index.analyse import Analysis, analyse
from codeloop.index.term_indexes import TermIndexes
from codeloop.index.walker import MAX_FILE_BYTES, skipped_by_name
from codeloop.workspace.errors import UnsafePath
from codeloop.workspace.hostfs import SafeRoot


@dataclass(frozen=True)
class Parsed:
    """A file as read for the index: its stat, hash and analysis; `analysis` is None when
    the content is the hash the index had (only its stat is new)."""

    size: int
    mtime_ns: int
    digest: str
    analysis: Analysis | None


def parse(fs: SafeRoot, rel: str, old_hash: str | None) -> Parsed | None:
    """Read and analyse `rel` (None when it is gone, not a regular file, or skipped)."""
    try:
        st = fs.lstat(rel)
        if (st is None or not stat.S_ISREG(st.st_mode) or st.st_size > MAX_FILE_BYTES
                or skipped_by_name(rel)):
            return None
        data = fs.read_bytes(rel, MAX_FILE_BYTES + 1)
    except (OSError, UnsafePath):
        return None
    digest = store.content_hash(data)
    analysis = None if digest == old_hash else analyse(rel, data)
    return Parsed(st.st_size, st.st_mtime_ns, digest, analysis)


@dataclass(frozen=True)
class Change:
    """What a file's new rows change besides its content: the set of indexed files
    (`files`; `indexed`: whether the file is among them now), or the names it defines
    (`names`: those it began or stopped defining)."""

    files: bool
    indexed: bool
    names: frozenset[str] = frozenset()


class IndexWriter:
    """Stores parsed files in the SQLite store and the term indexes; the caller holds the
    index's lock and a transaction. `changed(path, change)` runs after every change;
    `rolled_back()` after `rollback`, to forget what those calls were told."""

    def __init__(self, db: sqlite3.Connection, terms: TermIndexes,
                 changed: Callable[[str, Change], None],
                 rolled_back: Callable[[], None] = lambda: None) -> None:
        self.db, self.terms, self.changed, self.rolled_back = db, terms, changed, rolled_back

    def rollback(self) -> None:
        """Undo the caller's transaction."""
        self.db.execute("ROLLBACK")
        self.rolled_back()

    def apply(self, rel: str, old_hash: str | None, parsed: Parsed | None) -> str:
        """Bring one file's rows up to date; returns "added", "changed", "same" or "removed"."""
        if parsed is None:
            if old_hash is not None:
                self.drop(rel)
            return "removed"
        if parsed.analysis is None:
            self.db.execute("UPDATE files SET size=?, mtime_ns=? WHERE path=?",
                            (parsed.size, parsed.mtime_ns, rel))
            return "same"
        a = parsed.analysis
        defined = frozenset(d.name for d in a.symbols.definitions)
        if old_hash is None:
            change = Change(files=True, indexed=a.indexed, names=defined)
        else:
            indexed, names = self._shape(rel)
            change = Change(files=indexed != a.indexed, indexed=a.indexed,
                            names=defined.symmetric_difference(names))
            self._delete(rel)
        self._insert(rel, parsed.size, parsed.mtime_ns, parsed.digest, a)
        self.changed(rel, change)
        return "added" if old_hash is None else "changed"

    def drop(self, rel: str) -> None:
        self._delete(rel)
        self.changed(rel, Change(files=True, indexed=False))

    def _shape(self, rel: str) -> tuple[bool, set[str]]:
        """Whether the stored file is indexed, and the names it defines."""
        row = self.db.execute("SELECT indexed FROM files WHERE path=?", (rel,)).fetchone()
        names = {str(r[0]) for r in self.db.execute("SELECT name FROM defs WHERE path=?", (rel,))}
        return bool(row and row[0]), names

    def _delete(self, rel: str) -> None:
        self.terms.remove(rel, store.delete_file_rows(self.db, rel))

    def _insert(self, rel: str, size: int, mtime_ns: int, digest: str, a: Analysis) -> None:
        db = self.db
        db.execute("INSERT INTO files VALUES (?,?,?,?,?,?,?)",
                   (rel, size, mtime_ns, digest, a.language, int(a.indexed), a.lines))
        if not a.indexed:
            return
        chunk_docs = []
        for chunk, toks in zip(a.chunks, a.chunk_terms, strict=True):
            cur = db.execute("INSERT INTO chunks(path, start_line, end_line, symbol) "
                             "VALUES (?,?,?,?)", (rel, chunk.start_line, chunk.end_line,
                                                  chunk.symbol))
            chunk_docs.append((str(cur.lastrowid), toks))
        self.terms.add(rel, chunk_docs, a.file_terms)
        db.executemany("INSERT INTO defs VALUES (?,?,?,?,?,?,?)", [
            (rel, d.name, d.kind, d.start_line, d.end_line, d.signature, d.parent)
            for d in a.symbols.definitions])
        db.executemany("INSERT INTO refs VALUES (?,?,?,?)", [
            (rel, r.name, r.line, r.kind) for r in a.symbols.references])
        db.executemany("INSERT INTO imports VALUES (?,?)", [
            (rel, m) for m in a.symbols.imports])

    def current_hash(self, rel: str) -> str | None:
        row = self.db.execute("SELECT hash FROM files WHERE path=?", (rel,)).fetchone()
        return None if row is None else str(row[0])
