"""The SQLite event store: appends, reads after a seq, listings, waiting, and bad input."""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from pathlib import Path

import pytest

from codeloop.errors import SessionNotFound, StoreError
from codeloop.events import (
    ModelCallFinished,
    SessionFinished,
    SessionStarted,
    UnknownEvent,
    UsageData,
    UserMessage,
    parse_event,
)
from codeloop.session.store import SQLiteEventStore


def started() -> SessionStarted:
    return SessionStarted(task="t", repo="/r", model="m")


def test_append_assigns_consecutive_seqs_and_reads_after(tmp_path: Path) -> None:
    store = SQLiteEventStore(tmp_path / "e.sqlite")
    store.create("s1")
    assert store.append("s1", [started()]) == 1
    assert store.append("s1", [UserMessage(text="a"), UserMessage(text="b")]) == 3
    assert [e.seq for e in store.read("s1")] == [1, 2, 3]
    after = store.read("s1", after_seq=1)
    assert [e.event.text for e in after] == ["a", "b"]  # type: ignore[union-attr]
    assert store.read("s1", after_seq=3) == []


def test_listing_is_derived_from_events(tmp_path: Path) -> None:
    store = SQLiteEventStore(tmp_path / "e.sqlite")
    store.create("s1", owner="alice")
    store.append("s1", [started()])
    store.append("s1", [ModelCallFinished(step=1, model="m", cost_usd=0.25,
                                          usage=UsageData(input_tokens=5))])
    store.append("s1", [SessionFinished(status="finished")])
    row = store.get("s1")
    assert (row.status, row.steps, row.cost_usd, row.task) == ("finished", 1, 0.25, "t")
    assert [r.id for r in store.sessions(owner="alice")] == ["s1"]
    assert store.sessions(owner="bob") == []
    assert store.get("s") == row  # a unique prefix finds the session


def test_unknown_session_is_a_clear_error(tmp_path: Path) -> None:
    store = SQLiteEventStore(tmp_path / "e.sqlite")
    with pytest.raises(SessionNotFound) as info:
        store.get("nope")
    assert "codeloop sessions" in info.value.hint
    with pytest.raises(SessionNotFound):
        store.append("nope", [started()])


def test_a_failed_append_leaves_the_log_intact(tmp_path: Path) -> None:
    store = SQLiteEventStore(tmp_path / "e.sqlite")
    store.create("s1")
    store.append("s1", [started()])
    conn = sqlite3.connect(tmp_path / "e.sqlite")
    # A conflicting row makes the next append's insert fail half-way through its batch.
    conn.execute("INSERT INTO events VALUES ('s1', 3, 'user_message', 0, '{}')")
    conn.commit()
    with pytest.raises(StoreError):
        store.append("s1", [UserMessage(text="x"), UserMessage(text="y")])
    assert store.get("s1").last_seq == 1


def test_unknown_event_types_are_kept(tmp_path: Path) -> None:
    event = parse_event({"type": "from_the_future", "v": 9, "ts": 1.0, "extra": [1, 2]})
    assert isinstance(event, UnknownEvent) and event.model_dump()["extra"] == [1, 2]


def test_wait_wakes_on_append_from_another_thread(tmp_path: Path) -> None:
    store = SQLiteEventStore(tmp_path / "e.sqlite")
    store.create("s1")
    store.append("s1", [started()])
    threading.Timer(0.1, lambda: store.append("s1", [UserMessage(text="hi")])).start()
    begin = time.monotonic()
    assert store.wait("s1", after_seq=1, timeout=5)
    assert time.monotonic() - begin < 4
    assert not store.wait("s1", after_seq=2, timeout=0.1)


def test_unwritable_store_gives_an_actionable_error(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        target = Path("/proc/codeloop-cannot-exist/e.sqlite")
    else:
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        target = locked / "sub" / "e.sqlite"
    with pytest.raises((StoreError, OSError)):
        SQLiteEventStore(target)
