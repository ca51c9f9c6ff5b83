"""The one place that picks the memory store: PostgreSQL when the event store is there
(CODELOOP_DATABASE_URL), else `memory.sqlite` in the data directory."""

from __future__ import annotations

from pathlib import Path

from codeloop.errors import ConfigError
from codeloop.memory.store import MemoryStore, open_memory


def open_memory_store(data: Path, url: str | None) -> MemoryStore:
    """The store at `url` (the event store's PostgreSQL database) if set, else in `data`."""
    if url is None:
        return open_memory(data)
    try:
        from codeloop.memory.store_pg import open_pg_memory
    except ImportError as exc:
        raise ConfigError("the event store is PostgreSQL but psycopg is not installed",
                          "pip install 'codeloop[postgres]'") from exc
    return open_pg_memory(url)


def memory_beside(events: object) -> MemoryStore | None:
    """The memory store that goes with an event store: the same PostgreSQL database, or
    `memory.sqlite` beside its SQLite file; None for a store that is neither."""
    url = getattr(events, "url", None)
    if isinstance(url, str):
        return open_memory_store(Path(), url)
    path = getattr(events, "path", None)
    return open_memory(path.parent) if isinstance(path, Path) else None
