"""What the user's tree looked like when the session's merged view was built.

One record per file or symlink: the user's stat (to detect that the user changed a file since,
before apply overwrites it) and the merged view's stat (to find the session's changes without
reading: an untouched hard link still has the recorded inode).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from codeloop.workspace.errors import WorkspaceStateError

_VERSION = 2


@dataclass
class Entry:
    kind: str  # "f" regular file, "l" symlink
    u_ino: int
    u_mtime: int
    u_size: int
    u_mode: int
    m_ino: int
    m_mtime: int
    m_ctime: int
    m_size: int
    m_mode: int

    @classmethod
    def from_stats(cls, kind: str, user: os.stat_result, merged: os.stat_result) -> Entry:
        return cls(kind, user.st_ino, user.st_mtime_ns, user.st_size, user.st_mode,
                   merged.st_ino, merged.st_mtime_ns, merged.st_ctime_ns, merged.st_size,
                   merged.st_mode)

    def user_matches(self, st: os.stat_result) -> bool:
        """The user's file is still the one the session started from."""
        return (self.u_ino, self.u_mtime, self.u_size, self.u_mode) == (
            st.st_ino, st.st_mtime_ns, st.st_size, st.st_mode)

    def row(self) -> list[int | str]:
        return [self.kind, self.u_ino, self.u_mtime, self.u_size, self.u_mode, self.m_ino,
                self.m_mtime, self.m_ctime, self.m_size, self.m_mode]

    def merged_matches(self, st: os.stat_result) -> bool:
        return (self.m_ino, self.m_mtime, self.m_ctime, self.m_size, self.m_mode) == (
            st.st_ino, st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_mode)


DirStamp = tuple[int, int, int]  # inode, mtime_ns, ctime_ns; (inode, -1, -1) is never trusted


@dataclass
class DirIndex:
    """Per merged-view directory: the expected {name: inode} and the names a stat must settle."""

    expected: dict[str, dict[str, int]]
    subdirs: dict[str, list[str]]
    own: dict[str, list[str]]
    trusted: dict[str, tuple[int, int, int]]  # dir -> (inode, mtime, ctime) known unchanged


@dataclass
class Manifest:
    root: str
    kind: str  # "overlay" (hard-link farm) or "copy"
    created: float
    entries: dict[str, Entry]
    dirs: dict[str, DirStamp]  # merged-view directory ("" is the top) -> its stamp
    sealed_ns: int = 0  # a filesystem timestamp taken after the dir stamps were recorded
    _index: DirIndex | None = field(default=None, repr=False, compare=False)

    def index(self) -> DirIndex:
        """The directory index of the scan, built once per change of the manifest."""
        if self._index is None:
            self._index = self._build_index()
        return self._index

    def invalidate(self) -> None:
        self._index = None

    def _build_index(self) -> DirIndex:
        expected: dict[str, dict[str, int]] = {d: {} for d in self.dirs}
        subdirs: dict[str, list[str]] = {d: [] for d in self.dirs}
        own: dict[str, list[str]] = {}
        trusted: dict[str, tuple[int, int, int]] = {}
        for d, (ino, mtime, ctime) in self.dirs.items():
            if d:
                parent, _, name = d.rpartition("/")
                expected.setdefault(parent, {})[name] = ino
                subdirs.setdefault(parent, []).append(name)
            # A stamp older than the seal cannot hide a later change: any change after the
            # seal gets a timestamp at least the seal's, so it differs from the stamp.
            if mtime < self.sealed_ns and ctime < self.sealed_ns:
                trusted[d] = (ino, mtime, ctime)
        copy_mode = self.kind != "overlay"
        for rel, e in self.entries.items():
            parent, _, name = rel.rpartition("/")
            expected.setdefault(parent, {})[name] = e.m_ino
            if copy_mode or e.m_ino != e.u_ino:
                own.setdefault(parent, []).append(name)
        return DirIndex(expected, subdirs, own, trusted)

    def save(self, path: Path) -> None:
        self.invalidate()
        payload = {"version": _VERSION, "root": self.root, "kind": self.kind,
                   "created": self.created, "dirs": self.dirs, "sealed_ns": self.sealed_ns,
                   "entries": {k: v.row() for k, v in self.entries.items()}}
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(payload, separators=(",", ":")))
        os.replace(tmp, path)

    @classmethod
    def load(cls, path: Path) -> Manifest:
        try:
            payload = json.loads(path.read_text())
            if payload.get("version") != _VERSION:
                raise ValueError(f"unknown version {payload.get('version')}")
            entries = {k: Entry(*v) for k, v in payload["entries"].items()}
            dirs = {k: (int(v[0]), int(v[1]), int(v[2])) for k, v in payload["dirs"].items()}
            return cls(payload["root"], payload["kind"], float(payload["created"]), entries,
                       dirs, int(payload["sealed_ns"]))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise WorkspaceStateError(
                f"the workspace state {path} cannot be read: {exc}",
                "`codeloop discard ID` rebuilds the workspace from your repository",
            ) from exc
