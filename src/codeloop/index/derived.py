"""The file graph and the commit search of one index: loaded from its store when saved
there for the same files (the same git HEAD), else built and saved; the graph is kept up to
date across edits (an edited or new file's edges redone, `graph.with_file_edges`, with
those of the files referring to a name it began or stopped defining or importing it; a
removed file's dropped, `graph_removal.without_files`) and
saved again when the index closes or is copied (`graph_store`, `history.save_search`)."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Collection
from pathlib import Path

from codeloop.index import graph_store, history
from codeloop.index.graph import (
    FileGraph,
    build_graph,
    files_importing,
    files_referring,
    names_defined,
    references_into,
    with_file_edges,
)
from codeloop.index.graph_removal import without_files
from codeloop.index.history import CommitSearch, git_head, recent_commits
from codeloop.index.writer import Change

# Past this many files to redo (or a REDO_SHARE-th of all, if more) the graph is built
# again instead: on sympy (2,074 files) a build took 860 ms, redoing the edges of 1, 100
# or 400 files 36, 119 or 145 ms (most of it the sums over all edges, done once).
REDO_FILES = 50
REDO_SHARE = 4


class DerivedStructures:
    """The graph and commit search of the store `db`; every use holds the index's `lock`."""

    def __init__(self, db: sqlite3.Connection, lock: threading.RLock, history_root: Path
                 ) -> None:
        self.db, self._lock, self.history_root = db, lock, history_root
        self._graph: FileGraph | None = None
        self._edited: set[str] = set()
        self._renamed: set[str] = set()  # names the edited files began or stopped defining
        self._added: set[str] = set()  # edited files that are new
        self._removed: set[str] = set()  # files of the graph gone from the index
        self._saved = True
        self._history: tuple[str | None, CommitSearch] | None = None
        # How the ones in memory were made: "built", "stored" or "stored+updated" (the saved
        # graph with changed files' edges redone); tests read them.
        self.graph_origin: str | None = None
        self.history_origin: str | None = None

    def changed(self, rel: str, change: Change) -> None:
        """A file's rows changed (the caller holds the lock): its edges are to redo, and
        with them, when it began or stopped defining names, those of the files referring to
        those names (for a new file, also of those whose imports may name it; a removed
        file's, of those that pointed at it)."""
        if self._graph is None:
            return
        in_graph = rel in self._graph.index
        if change.indexed:
            self._edited.add(rel)
            if in_graph:
                self._removed.discard(rel)  # gone and back before the graph was asked for
            else:
                self._added.add(rel)
        else:
            self._edited.discard(rel)
            self._added.discard(rel)
            if in_graph:
                self._removed.add(rel)
        self._renamed |= change.names

    def graph(self) -> FileGraph:
        """The file graph: from the store when saved for these files, else built."""
        with self._lock:
            if self._graph is not None and (self._edited or self._removed):
                self._graph = self._updated(self._graph, self._edited, self._added,
                                            self._removed, self._renamed)
            if self._graph is None:
                self._graph = self._stored_or_built()
            self._edited, self._renamed, self._added, self._removed = set(), set(), set(), set()
            return self._graph

    def _updated(self, graph: FileGraph, edited: set[str], added: set[str], removed: set[str],
                 renamed: set[str], also: Collection[str] = ()) -> FileGraph | None:
        """`graph` with the `added` files in it, the `removed` ones out, and the edges redone
        of the `edited` files, of the files referring to a name some file began or stopped
        defining (`renamed`: its definers, so their edges' weights, changed) and of those
        whose imports may name a new one (and `also`); None when those are too many to be
        worth it (built again instead)."""
        limit = max(REDO_FILES, len(graph.paths) // REDO_SHARE)
        redo = {*edited, *also}
        if renamed and len(redo) <= limit:
            redo |= files_referring(self.db, renamed)
        if added and len(redo) <= limit:  # a scan of the imports per new file
            redo |= files_importing(self.db, added)
        if len(redo) > limit:
            return None
        self._saved = False
        if removed:
            graph = without_files(graph, self.db, removed)
        return with_file_edges(graph, self.db, redo, added)

    def _stored_or_built(self) -> FileGraph:
        files = graph_store.indexed_files(self.db)
        found = graph_store.load_graph(self.db, files)
        graph: FileGraph | None = None
        if found is not None and not found[1]:
            self.graph_origin, self._saved = "stored", True
            return found[0]
        if found is not None:
            saved, stale = found
            # A file defining other names than when saved: the files whose edges to it
            # name one it dropped, and those referring to a name it took up (one no edge
            # to it names) have theirs redone.
            renamed, also = names_defined(self.db, stale.added), set()
            into = references_into(saved, sorted(stale.reshaped))
            for path, now in stale.reshaped.items():
                also |= {src for src, name in into[path] if name not in now}
                renamed |= now - {name for _, name in into[path]}
            graph = self._updated(saved, {*stale.changed, *stale.reshaped, *stale.added},
                                  set(stale.added), set(stale.removed), renamed, also)
            self.graph_origin = "stored+updated"
        if graph is None:
            graph, self.graph_origin = build_graph(self.db), "built"
        self._saved = graph_store.save_graph(self.db, graph, files)
        return graph

    def save(self) -> None:
        """Save the graph if edits changed it since it was loaded or saved."""
        with self._lock:
            if self._graph is not None and (self._edited or not self._saved):
                graph = self.graph()
                self._saved = graph_store.save_graph(self.db, graph,
                                                     graph_store.indexed_files(self.db))

    def commit_search(self) -> CommitSearch:
        """Search over recent commit messages (see `history`): from the store when saved for
        this git HEAD, else built (and saved); built again when HEAD moves."""
        head = git_head(self.history_root)
        with self._lock:
            if self._history is None or self._history[0] != head:
                search = history.load_search(self.db, head)
                self.history_origin = "stored"
                if search is None:
                    search = CommitSearch(recent_commits(self.history_root))
                    self.history_origin = "built"
                    history.save_search(self.db, head, search)
                self._history = (head, search)
            return self._history[1]
