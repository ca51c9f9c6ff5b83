"""Values an index derives from its rows, kept until the rows they are made of change: most
until any file changes; those made of the set of paths alone until a file comes or goes,
and the path tables (`path_tables`) updated in place then."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from typing import TypeVar

from codeloop.index.path_tables import KeysOf, PathTables
from codeloop.index.writer import Change

# Made from the list of indexed paths alone: kept when a file's content changes.
_PATH_MEMOS = frozenset({"path_set", "dotted_modules", "file_stems_kind"})
T = TypeVar("T")


class Memos:
    """An index's derived values; every use holds the index's `lock`."""

    def __init__(self, db: sqlite3.Connection, lock: threading.RLock) -> None:
        self._db, self._lock = db, lock
        self._values: dict[str, object] = {}
        self._paths = PathTables()

    def get(self, name: str, factory: Callable[[], T]) -> T:
        """`name`'s value, made by `factory` at its first use since it was dropped."""
        values = self._paths.values if name in _PATH_MEMOS else self._values
        with self._lock:
            if name not in values:
                values[name] = factory()
            return values[name]  # type: ignore[return-value]

    def paths(self) -> list[str]:
        """The indexed paths, sorted."""
        with self._lock:
            return list(self._loaded().paths or ())

    def table(self, name: str, keys_of: KeysOf) -> dict[str, list[str]]:
        with self._lock:
            return self._loaded().table(name, keys_of)

    def changed(self, path: str, change: Change) -> None:
        """`path`'s rows changed (and with them, maybe, the set of indexed files)."""
        self._values.clear()
        if change.files:
            self._paths.moved(path, change.indexed)

    def rolled_back(self) -> None:
        """The store is back where it was: the path tables, told of changes undone now,
        are made again from it."""
        self._values.clear()
        self._paths.clear()

    def _loaded(self) -> PathTables:
        if self._paths.paths is None:
            self._paths.paths = [str(r[0]) for r in self._db.execute(
                "SELECT path FROM files WHERE indexed=1 ORDER BY path")]
        return self._paths
