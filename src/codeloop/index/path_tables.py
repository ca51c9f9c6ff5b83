"""The index's tables of its own paths (by suffix, folder name, file stem), kept up to date
as files come and go rather than built again.

Built again after each new file, the four tables cost a sympy refresh ~15 ms and ~30,000
new lists, enough to set off a full garbage collection (~60 ms) every few turns.
"""

from __future__ import annotations

import bisect
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable

# The keys a path is listed under; a key given twice lists the path twice.
KeysOf = Callable[[str], Iterable[str]]


def grouped(paths: Iterable[str], keys_of: KeysOf) -> dict[str, list[str]]:
    """Each key `keys_of` gives some path to the paths giving it, in the order of `paths`."""
    out: dict[str, list[str]] = defaultdict(list)
    for path in paths:
        for key in keys_of(path):
            out[key].append(path)
    return dict(out)


class PathTables:
    """The sorted indexed paths, tables grouping them by keys (updated in place), and other
    values made from the paths alone (`values`: dropped when a path comes or goes).

    A table's lists are replaced, never changed, so a reader on another thread holding one
    sees the paths before or after a change, not half of it. The caller holds a lock."""

    def __init__(self) -> None:
        self.paths: list[str] | None = None
        self.values: dict[str, object] = {}
        self._tables: dict[str, tuple[KeysOf, dict[str, list[str]]]] = {}

    def clear(self) -> None:
        self.paths = None
        self.values.clear()
        self._tables.clear()

    def table(self, name: str, keys_of: KeysOf) -> dict[str, list[str]]:
        """The `name` table of the paths (set first), built at its first use."""
        if name not in self._tables:
            if self.paths is None:
                raise RuntimeError("path tables: the paths are not loaded")
            self._tables[name] = (keys_of, grouped(self.paths, keys_of))
        return self._tables[name][1]

    def moved(self, path: str, present: bool) -> None:
        """`path` is now among the indexed files (`present`) or not."""
        self.values.clear()
        if self.paths is None:
            self._tables.clear()
            return
        i = bisect.bisect_left(self.paths, path)
        there = i < len(self.paths) and self.paths[i] == path
        if there == present:
            return
        self.paths = ([*self.paths[:i], path, *self.paths[i:]] if present
                      else self.paths[:i] + self.paths[i + 1:])
        for keys_of, table in self._tables.values():
            for key, times in Counter(keys_of(path)).items():
                old = table.get(key, [])
                if present:
                    at = bisect.bisect_right(old, path)
                    table[key] = old[:at] + [path] * times + old[at:]
                elif kept := [p for p in old if p != path]:
                    table[key] = kept
                else:
                    table.pop(key, None)
