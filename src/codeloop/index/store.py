"""The index's SQLite file: files with their hashes, chunks, definitions, references, imports,
and the structures derived from them that are saved to spare a warm open (`saved`)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from codeloop.errors import CodeloopError

SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files (
  path TEXT PRIMARY KEY, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL,
  hash TEXT NOT NULL, language TEXT NOT NULL, indexed INTEGER NOT NULL, lines INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS chunks (
  id INTEGER PRIMARY KEY AUTOINCREMENT, path TEXT NOT NULL, start_line INTEGER NOT NULL,
  end_line INTEGER NOT NULL, symbol TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS chunks_path ON chunks(path);
CREATE TABLE IF NOT EXISTS defs (
  path TEXT NOT NULL, name TEXT NOT NULL, kind TEXT NOT NULL, start_line INTEGER NOT NULL,
  end_line INTEGER NOT NULL, signature TEXT NOT NULL, parent TEXT
);
CREATE INDEX IF NOT EXISTS defs_name ON defs(name);
CREATE INDEX IF NOT EXISTS defs_path ON defs(path);
CREATE TABLE IF NOT EXISTS refs (
  path TEXT NOT NULL, name TEXT NOT NULL, line INTEGER NOT NULL, kind TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS refs_name ON refs(name);
CREATE INDEX IF NOT EXISTS refs_path ON refs(path);
CREATE TABLE IF NOT EXISTS imports (path TEXT NOT NULL, module TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS imports_path ON imports(path);
CREATE TABLE IF NOT EXISTS saved (
  name TEXT PRIMARY KEY, key TEXT NOT NULL, digest TEXT NOT NULL, data BLOB NOT NULL
);
"""


class IndexStoreError(CodeloopError):
    """The index file could not be opened or written."""


def cache_root() -> Path:
    """`$CODELOOP_CACHE_DIR`, else `$XDG_CACHE_HOME/codeloop`, else `~/.cache/codeloop`."""
    explicit = os.environ.get("CODELOOP_CACHE_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "codeloop"


def index_dir(root: Path, cache: Path | None = None) -> Path:
    """The directory holding one repository's index, named for the repository's real path."""
    real = str(root.resolve())
    digest = hashlib.sha1(real.encode()).hexdigest()[:12]
    return (cache or cache_root()) / "index" / f"{root.resolve().name}-{digest}"


ORIGIN_FILE = "origin.json"


@dataclass(frozen=True)
class Origin:
    """What an index directory was made for: the tree it indexes and, for a workspace's view,
    the repository its index was seeded from."""

    root: str
    seed: str | None = None

    @property
    def is_view(self) -> bool:
        return self.seed is not None


def read_origin(directory: Path) -> Origin | None:
    """The recorded origin of an index directory; None for one made before origins were kept."""
    try:
        data = json.loads((directory / ORIGIN_FILE).read_text("utf-8"))
        return Origin(str(data["root"]), data.get("seed"))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def write_origin(directory: Path, origin: Origin) -> None:
    """Record the origin (atomically: a pruning process may read it at any time)."""
    directory.mkdir(parents=True, exist_ok=True)
    temp = directory / f".{ORIGIN_FILE}.{os.getpid()}"
    temp.write_text(json.dumps({"root": origin.root, "seed": origin.seed}), "utf-8")
    temp.replace(directory / ORIGIN_FILE)


def record_origin(directory: Path, root: Path, seed: Path | None) -> None:
    """Say which tree the directory indexes (a copied seed index says its source's)."""
    recorded = read_origin(directory)
    if recorded is not None and recorded.root == str(root) and (seed is None or recorded.is_view):
        return
    write_origin(directory, Origin(str(root), str(seed.resolve()) if seed else None))


def index_dirs(cache: Path | None = None) -> list[Path]:
    """Every index directory under the cache."""
    top = (cache or cache_root()) / "index"
    try:
        return sorted(p for p in top.iterdir() if p.is_dir())
    except FileNotFoundError:
        return []


def content_hash(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def connect(path: Path) -> sqlite3.Connection:
    """Open (creating if needed) the index database; a version change starts it afresh."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        row = None
        with contextlib.suppress(sqlite3.OperationalError):
            row = db.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
        if row is not None and row[0] != str(SCHEMA_VERSION):
            for table in ("meta", "files", "chunks", "defs", "refs", "imports", "saved"):
                db.execute(f"DROP TABLE IF EXISTS {table}")
        db.executescript(_SCHEMA)
        db.execute("INSERT OR REPLACE INTO meta VALUES ('schema', ?)", (str(SCHEMA_VERSION),))
    except (OSError, sqlite3.Error) as exc:
        raise IndexStoreError(
            f"cannot open the index at {path}: {exc}",
            "set CODELOOP_CACHE_DIR to a writable directory, or delete the index file",
        ) from exc
    return db


def delete_file_rows(db: sqlite3.Connection, path: str) -> list[int]:
    """Remove everything indexed for `path`; returns the ids of the chunks removed."""
    ids = [int(r[0]) for r in db.execute("SELECT id FROM chunks WHERE path=?", (path,))]
    for table in ("files", "chunks", "defs", "refs", "imports"):
        db.execute(f"DELETE FROM {table} WHERE path=?", (path,))
    return ids
