"""The one place that picks the event store: PostgreSQL when CODELOOP_DATABASE_URL names
one, else the SQLite file in the data directory."""

from __future__ import annotations

import os
from pathlib import Path

from codeloop.config import data_dir
from codeloop.errors import ConfigError
from codeloop.session.store import EventStore, SQLiteEventStore
from codeloop.session.store_observed import ObservedStore
from codeloop.telemetry import OTLP_ENV

DATABASE_URL_ENV = "CODELOOP_DATABASE_URL"
SQLITE_NAME = "events.sqlite"


def database_url(env: dict[str, str] | None = None) -> str | None:
    """The PostgreSQL URL from the environment, or None for SQLite."""
    url = (os.environ if env is None else env).get(DATABASE_URL_ENV, "").strip()
    if not url:
        return None
    if not url.startswith(("postgresql://", "postgres://")):
        raise ConfigError(f"{DATABASE_URL_ENV} must be a postgresql:// URL",
                          f"unset {DATABASE_URL_ENV} to keep the events in SQLite")
    return url


def open_event_store(base: Path | None = None, url: str | None = None) -> EventStore:
    """The store for `url` (default: CODELOOP_DATABASE_URL), else `<base>/events.sqlite`;
    its appends traced when an OTLP endpoint is configured."""
    url = url or database_url()
    store: EventStore
    if url is not None:
        try:
            from codeloop.session.store_pg import PostgresEventStore
        except ImportError as exc:
            raise ConfigError(f"{DATABASE_URL_ENV} is set but psycopg is not installed",
                              "pip install 'codeloop[postgres]'") from exc
        store = PostgresEventStore(url)
    else:
        store = SQLiteEventStore((base or data_dir()) / SQLITE_NAME)
    return _traced(store)


def _traced(store: EventStore) -> EventStore:
    if not any(os.environ.get(name) for name in OTLP_ENV):
        return store
    try:
        from codeloop.telemetry.traces import configured_tracer

        tracer = configured_tracer()
    except ImportError as exc:
        store.close()
        raise ConfigError(f"{OTLP_ENV[0]} is set but OpenTelemetry is not installed",
                          "pip install 'codeloop[otel]'") from exc
    return ObservedStore(store, [tracer]) if tracer is not None else store
