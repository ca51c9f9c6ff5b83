"""The event store, one suite for SQLite and PostgreSQL: appends, reads after a seq,
listings, waiting, idempotent retries, and bad input."""

from __future__ import annotations

import os
import socket
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from codeloop.errors import ConfigError, SessionNotFound, StoreError
from codeloop.events import (
    ModelCallFinished,
    SessionFinished,
    SessionStarted,
    UnknownEvent,
    UsageData,
    UserMessage,
    parse_event,
)
from codeloop.session.store import EventStore, SQLiteEventStore
from codeloop.session.stores import open_event_store

Raw = Callable[[str], None]  # runs one SQL statement on the store's database, outside it


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[EventStore, Raw]]:
    """A fresh store of each kind, and a way to write to its database behind its back."""
    if request.param == "sqlite":
        path = tmp_path / "e.sqlite"
        sqlite_store = SQLiteEventStore(path)

        def raw_sqlite(sql: str) -> None:
            with sqlite3.connect(path) as conn:
                conn.execute(sql)

        yield sqlite_store, raw_sqlite
        sqlite_store.close()
        return
    import psycopg

    from codeloop.session.store_pg import PostgresEventStore

    url: str = request.getfixturevalue("pg_url")
    pg_store = PostgresEventStore(url)

    def raw_pg(sql: str) -> None:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(sql.encode())

    yield pg_store, raw_pg
    pg_store.close()


@pytest.fixture
def store(backend: tuple[EventStore, Raw]) -> EventStore:
    return backend[0]


def started() -> SessionStarted:
    return SessionStarted(task="t", repo="/r", model="m")


def test_append_assigns_consecutive_seqs_and_reads_after(store: EventStore) -> None:
    store.create("s1")
    assert store.append("s1", [started()]) == 1
    assert store.append("s1", [UserMessage(text="a"), UserMessage(text="b")]) == 3
    assert [e.seq for e in store.read("s1")] == [1, 2, 3]
    after = store.read("s1", after_seq=1)
    assert [e.event.text for e in after] == ["a", "b"]  # type: ignore[union-attr]
    assert store.read("s1", after_seq=3) == []
    assert [seq for seq, _ in store.read_wire("s1", 1)] == [2, 3]
    assert '"text":"b"' in store.read_wire("s1", 2)[0][1]


def test_listing_is_derived_from_events(store: EventStore) -> None:
    store.create("s1", owner="alice")
    store.append("s1", [started()])
    store.append("s1", [ModelCallFinished(step=1, model="m", cost_usd=0.25,
                                          usage=UsageData(input_tokens=5))])
    store.append("s1", [SessionFinished(status="finished")])
    row = store.get("s1")
    assert (row.status, row.steps, row.cost_usd, row.task) == ("finished", 1, 0.25, "t")
    assert [r.id for r in store.sessions(owner="alice")] == ["s1"]
    assert [r.id for r in store.sessions(owner=("bob", "alice"), status="finished")] == ["s1"]
    assert store.sessions(owner="bob") == []
    assert store.sessions(status="running") == []
    assert store.get("s") == row  # a unique prefix finds the session


def test_unknown_session_is_a_clear_error(store: EventStore) -> None:
    with pytest.raises(SessionNotFound) as info:
        store.get("nope")
    assert "codeloop sessions" in info.value.hint
    with pytest.raises(SessionNotFound):
        store.append("nope", [started()])
    store.create("s1")
    with pytest.raises(StoreError, match="already exists"):
        store.create("s1")


def test_replaying_an_append_never_duplicates_events(store: EventStore) -> None:
    store.create("s1")
    store.append("s1", [started()])
    batch = [UserMessage(text="a"), UserMessage(text="b")]
    assert store.append("s1", batch, after_seq=1) == 3
    # The retry of an append whose commit was not acknowledged: same seqs, same events.
    assert store.append("s1", batch, after_seq=1) == 3
    assert store.append("s1", batch[:1], after_seq=1) == 2
    assert [e.seq for e in store.read("s1")] == [1, 2, 3]
    assert store.get("s1").last_seq == 3
    # A retry that also carries events not yet stored writes only those.
    assert store.append("s1", [batch[1], UserMessage(text="c")], after_seq=2) == 4
    assert [getattr(e.event, "text", "") for e in store.read("s1")] == ["", "a", "b", "c"]


def test_replay_does_not_count_steps_or_cost_twice(store: EventStore) -> None:
    store.create("s1")
    store.append("s1", [started()])
    call = [ModelCallFinished(step=1, model="m", cost_usd=0.5)]
    store.append("s1", call, after_seq=1)
    store.append("s1", call, after_seq=1)
    row = store.get("s1")
    assert (row.steps, row.cost_usd, row.last_seq) == (1, 0.5, 2)


def test_a_different_event_at_a_stored_seq_is_a_conflict(store: EventStore) -> None:
    store.create("s1")
    store.append("s1", [started(), UserMessage(text="a")])
    with pytest.raises(StoreError, match="conflicting append"):
        store.append("s1", [UserMessage(text="other")], after_seq=1)
    with pytest.raises(StoreError, match="log ends at 2"):
        store.append("s1", [UserMessage(text="gap")], after_seq=5)
    assert [getattr(e.event, "text", "") for e in store.read("s1")] == ["", "a"]


def test_a_failed_append_leaves_the_log_intact(backend: tuple[EventStore, Raw]) -> None:
    store, raw = backend
    store.create("s1")
    store.append("s1", [started()])
    # A conflicting row makes the next append's insert fail half-way through its batch.
    raw("INSERT INTO events VALUES ('s1', 3, 'user_message', 0, '{}')")
    with pytest.raises(StoreError):
        store.append("s1", [UserMessage(text="x"), UserMessage(text="y")])
    assert store.get("s1").last_seq == 1


def test_unknown_event_types_are_kept() -> None:
    event = parse_event({"type": "from_the_future", "v": 9, "ts": 1.0, "extra": [1, 2]})
    assert isinstance(event, UnknownEvent) and event.model_dump()["extra"] == [1, 2]


def test_wait_wakes_on_append_from_another_thread(store: EventStore) -> None:
    store.create("s1")
    store.append("s1", [started()])
    threading.Timer(0.1, lambda: store.append("s1", [UserMessage(text="hi")])).start()
    begin = time.monotonic()
    assert store.wait("s1", after_seq=1, timeout=5)
    assert time.monotonic() - begin < 4
    assert not store.wait("s1", after_seq=2, timeout=0.1)


def test_concurrent_appends_to_one_session_get_distinct_seqs(store: EventStore) -> None:
    store.create("s1")
    store.append("s1", [started()])
    threads = [threading.Thread(target=lambda n=n: [store.append(
        "s1", [UserMessage(text=f"{n}-{i}")]) for i in range(10)]) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [e.seq for e in store.read("s1")] == list(range(1, 42))


def test_ping_answers(store: EventStore) -> None:
    store.ping()


def test_unwritable_store_gives_an_actionable_error(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        target = Path("/proc/codeloop-cannot-exist/e.sqlite")
    else:
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        target = locked / "sub" / "e.sqlite"
    with pytest.raises((StoreError, OSError)):
        SQLiteEventStore(target)


def test_unreachable_postgres_is_a_clear_error_without_the_password() -> None:
    pytest.importorskip("psycopg")
    from codeloop.session.store_pg import PostgresEventStore

    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    start = time.monotonic()
    with pytest.raises(StoreError) as info:
        PostgresEventStore(f"postgresql://u:s3cret@127.0.0.1:{port}/db")
    # At once, with the reason: the pool alone retried for its whole timeout and then said
    # only "pool initialization incomplete".
    assert time.monotonic() - start < 5
    assert "Connection refused" in str(info.value)
    assert "s3cret" not in str(info.value) and "u:***@127.0.0.1" in str(info.value)
    assert "CODELOOP_DATABASE_URL" in info.value.hint


def test_a_database_that_does_not_exist_is_named_at_once(pg_url: str) -> None:
    from urllib.parse import urlsplit, urlunsplit

    from codeloop.memory.store_pg import PostgresMemoryStore
    from codeloop.session.store_pg import PostgresEventStore

    missing = urlunsplit(urlsplit(pg_url)._replace(path="/no_such_db"))
    for store in (PostgresEventStore, PostgresMemoryStore):
        start = time.monotonic()
        with pytest.raises(StoreError) as info:
            store(missing)
        assert time.monotonic() - start < 5
        assert 'database "no_such_db" does not exist' in str(info.value)


def test_the_factory_picks_the_store_from_the_environment(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = open_event_store(tmp_path)
    assert isinstance(store, SQLiteEventStore) and store.path == tmp_path / "events.sqlite"
    monkeypatch.setenv("CODELOOP_DATABASE_URL", "mysql://nope")
    with pytest.raises(ConfigError, match="postgresql://"):
        open_event_store(tmp_path)


def test_the_factory_opens_postgres_for_a_database_url(
        pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from codeloop.session.store_pg import PostgresEventStore

    monkeypatch.setenv("CODELOOP_DATABASE_URL", pg_url)
    store = open_event_store(tmp_path)
    try:
        assert isinstance(store, PostgresEventStore)
        store.create("s1")
        assert store.append("s1", [started()]) == 1
    finally:
        store.close()
    assert not (tmp_path / "events.sqlite").exists()


def test_postgres_appends_survive_a_dropped_connection(pg_url: str) -> None:
    import psycopg

    from codeloop.session.store_pg import PostgresEventStore

    store = PostgresEventStore(pg_url, max_size=1)
    try:
        store.create("s1")
        store.append("s1", [started()])
        with psycopg.connect(pg_url, autocommit=True) as admin:
            # The pool's connection dies, as after a server restart or a network cut.
            admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                          "WHERE datname = current_database() AND pid <> pg_backend_pid()")
        assert store.append("s1", [UserMessage(text="after")]) == 2
        assert [e.seq for e in store.read("s1")] == [1, 2]
    finally:
        store.close()


def test_postgres_commits_like_sqlite_unless_the_url_asks_for_more(pg_url: str) -> None:
    from codeloop.session.store_pg import PostgresEventStore

    relaxed = PostgresEventStore(pg_url)
    durable = PostgresEventStore(pg_url + "?options=-csynchronous_commit%3Don")
    try:
        assert relaxed._query("SHOW synchronous_commit") == [("off",)]
        assert durable._query("SHOW synchronous_commit") == [("on",)]
    finally:
        relaxed.close()
        durable.close()
