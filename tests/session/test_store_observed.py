"""Store subscribers see each committed append with its seqs; a failing one is logged and
never fails the append."""

from __future__ import annotations

from pathlib import Path

import pytest

from codeloop.events import SessionStarted, StoredEvent, UserMessage
from codeloop.session.store import SQLiteEventStore
from codeloop.session.store_observed import ObservedStore


def test_subscribers_get_stored_events_and_a_broken_one_is_skipped(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    seen: list[tuple[str, int, str]] = []

    def broken(events: list[StoredEvent]) -> None:
        raise RuntimeError("exporter down")

    def record(events: list[StoredEvent]) -> None:
        seen.extend((e.session_id, e.seq, e.event.type) for e in events)

    store = ObservedStore(SQLiteEventStore(tmp_path / "e.sqlite"), [broken, record])
    store.create("s1")
    store.append("s1", [SessionStarted(task="t", repo="/r", model="m")])
    assert store.append("s1", [UserMessage(text="a"), UserMessage(text="b")]) == 3
    assert seen == [("s1", 1, "session_started"), ("s1", 2, "user_message"),
                    ("s1", 3, "user_message")]
    assert "exporter down" in caplog.text
    assert [e.seq for e in store.read("s1")] == [1, 2, 3]
