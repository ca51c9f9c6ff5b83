"""A sweep: make the index match the tree, committing a batch of files at a time.

Files are read and parsed outside the index's lock; the lock is held only while a batch is
written and committed. Every reader takes that lock too, so queries run between batches and
see the committed batches only (never half a batch), while the build goes on: during a cold
build the search tools answer from the files indexed so far and say so (`BuildProgress`).
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from codeloop.index.hits import UpdateStats
from codeloop.index.term_indexes import TermIndexes
from codeloop.index.walker import walk
from codeloop.index.writer import IndexWriter, Parsed, parse
from codeloop.workspace.hostfs import SafeRoot

# Files parsed per committed batch: small enough that the first answers come within a
# second or two of a cold start, large enough that commits cost little next to parsing.
BATCH_FILES = 100
# Tree entries listed between two pauses for foreground reads.
_WALK_STEP = 64


@dataclass(frozen=True)
class BuildProgress:
    """How far a running sweep is: files up to date out of the files in the tree (`total`
    is None while the tree is still being walked)."""

    indexed: int
    total: int | None

    def describe(self) -> str:
        if self.total is None:
            return f"{self.indexed} files indexed so far, the tree is still being listed"
        return f"{self.indexed} of {self.total} files indexed so far"


@dataclass
class SweepTarget:
    """What a sweep works on: the tree, the store and its term indexes, and the lock every
    reader takes. `progress` is set (under the lock) while a build is under way;
    `pause` runs between steps (it waits while a foreground read runs); `after_batch` runs
    after each commit (tests hold a build there)."""

    fs: SafeRoot
    db: sqlite3.Connection
    terms: TermIndexes
    writer: IndexWriter
    lock: threading.RLock
    pause: Callable[[], None] = lambda: None
    progress: BuildProgress | None = None
    after_batch: Callable[[int], None] | None = None


def run_sweep(root: Path, target: SweepTarget, batch_files: int = BATCH_FILES) -> UpdateStats:
    """Add, re-index and drop files so the index matches the disk."""
    started = time.perf_counter()
    stats = UpdateStats()
    with target.lock:
        cold = target.db.execute("SELECT 1 FROM files LIMIT 1").fetchone() is None
        if cold:
            target.progress = BuildProgress(0, None)
    entries = []
    for entry in walk(target.fs.root):  # outside the lock: queries go on while we walk
        entries.append(entry)
        if len(entries) % _WALK_STEP == 0:
            target.pause()
    with target.lock:
        known = {str(p): (int(s), int(m), str(h)) for p, s, m, h in
                 target.db.execute("SELECT path, size, mtime_ns, hash FROM files")}
    todo = [(e, known[e.rel][2] if e.rel in known else None) for e in entries
            if (seen := known.get(e.rel)) is None or seen[:2] != (e.size, e.mtime_ns)]
    gone = sorted(known.keys() - {e.rel for e in entries})
    stats.scanned = len(entries)
    stats.unchanged = len(entries) - len(todo)
    with target.lock:
        target.terms.begin_sweep(len(todo) + len(gone))
        if todo or cold:
            target.progress = BuildProgress(stats.unchanged, len(entries))
    try:
        for at in range(0, len(todo), batch_files):
            batch = todo[at:at + batch_files]
            parsed = []
            for entry, old_hash in batch:
                target.pause()
                parsed.append((entry.rel, old_hash, parse(target.fs, entry.rel, old_hash)))
            _commit(target, parsed, stats)
            with target.lock:
                target.progress = BuildProgress(stats.scanned - len(todo) + at + len(batch),
                                                len(entries))
            if target.after_batch is not None:
                target.after_batch(at // batch_files + 1)
        _commit(target, [(rel, known[rel][2], None) for rel in gone], stats)
    except BaseException:
        with target.lock:
            target.progress = None
            # Earlier batches are committed: the term indexes are rebuilt from the store.
            target.terms.abort_sweep()
            target.terms.rebuild()
        raise
    with target.lock:
        stats.lexical_rebuilt = target.terms.end_sweep()
        target.progress = None
    stats.seconds = time.perf_counter() - started
    return stats


def _commit(target: SweepTarget, parsed: list[tuple[str, str | None, Parsed | None]],
            stats: UpdateStats) -> None:
    """Write one batch in one transaction, under the lock."""
    if not parsed:
        return
    with target.lock:
        target.db.execute("BEGIN")
        try:
            for rel, old_hash, result in parsed:
                if target.writer.current_hash(rel) != old_hash:
                    # Re-indexed since the walk (an edit the loop reported): that is newer.
                    stats.unchanged += 1
                    continue
                outcome = target.writer.apply(rel, old_hash, result)
                if outcome == "added":
                    stats.added += 1
                elif outcome == "changed":
                    stats.changed += 1
                elif outcome == "removed" and old_hash is not None:
                    stats.removed += 1
                else:
                    stats.unchanged += 1
            target.db.execute("COMMIT")
        except BaseException:
            target.writer.rollback()
            raise

