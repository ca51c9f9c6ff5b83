"""Each file's definitions in line order, read from the index's store when first asked for
and again after the file is edited (loading all of sympy's took ~0.2 s of the first task
context, so they are not read at open)."""

from __future__ import annotations

import sqlite3

from codeloop.index.hits import SymbolHit

SQL_BATCH = 500  # parameters per query, well under SQLite's limit


class Definitions:
    """The per-file definitions read so far; callers hold the index's lock."""

    def __init__(self) -> None:
        self._by_path: dict[str, list[SymbolHit]] = {}
        self._edited: set[str] = set()

    def edited(self, path: str) -> None:
        """`path`'s rows changed: read them again when next asked for."""
        self._edited.add(path)

    def lookup(self, db: sqlite3.Connection, paths: list[str]) -> dict[str, list[SymbolHit]]:
        for path in self._edited:
            self._by_path.pop(path, None)
        self._edited = set()
        missing = sorted({p for p in paths if p not in self._by_path})
        for i in range(0, len(missing), SQL_BATCH):
            batch = missing[i:i + SQL_BATCH]
            self._by_path.update({path: [] for path in batch})
            for row in db.execute(
                    "SELECT path, name, kind, start_line, end_line, signature, parent FROM defs "
                    f"WHERE path IN ({','.join('?' * len(batch))}) ORDER BY path, start_line",
                    batch):
                self._by_path[row[0]].append(SymbolHit(*row))
        return {p: self._by_path[p] for p in paths}
