"""The file graph and the commit search of one index: loaded from its store when saved
there for the same files (the same git HEAD), else built and saved; the graph is kept up to
date across edits (an edited file's edges redone, `graph.with_file_edges`) and saved again
when the index closes or is copied (`graph_store`, `history.save_search`)."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

from codeloop.index import graph_store, history
from codeloop.index.graph import FileGraph, build_graph, with_file_edges
from codeloop.index.history import CommitSearch, git_head, recent_commits


class DerivedStructures:
    """The graph and commit search of the store `db`; every use holds the index's `lock`."""

    def __init__(self, db: sqlite3.Connection, lock: threading.RLock, history_root: Path
                 ) -> None:
        self.db, self._lock, self.history_root = db, lock, history_root
        self._graph: FileGraph | None = None
        self._edited: set[str] = set()
        self._saved = True
        self._history: tuple[str | None, CommitSearch] | None = None
        # How the ones in memory were made: "built", "stored" or "stored+updated" (the saved
        # graph with changed files' edges redone); tests read them.
        self.graph_origin: str | None = None
        self.history_origin: str | None = None

    def changed(self, rel: str, structural: bool) -> None:
        """A file's rows changed (the caller holds the lock): a change in the files or the
        names one defines drops the graph, any other marks the file's edges to redo."""
        if structural:
            self._graph = None
            self._edited.clear()
        elif self._graph is not None:
            self._edited.add(rel)

    def graph(self) -> FileGraph:
        """The file graph: from the store when saved for these files, else built."""
        with self._lock:
            if self._graph is None:
                self._graph = self._stored_or_built()
            elif self._edited:
                self._graph = with_file_edges(self._graph, self.db, self._edited)
                self._saved = False
            self._edited = set()
            return self._graph

    def _stored_or_built(self) -> FileGraph:
        files = graph_store.indexed_files(self.db)
        found = graph_store.load_graph(self.db, files)
        if found is None:
            graph, self.graph_origin = build_graph(self.db), "built"
        elif not found[1]:
            self.graph_origin, self._saved = "stored", True
            return found[0]
        else:
            graph = with_file_edges(found[0], self.db, set(found[1]))
            self.graph_origin = "stored+updated"
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
