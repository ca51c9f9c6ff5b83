"""The server on PostgreSQL: a session runs with its events in the database, and the live
stream is woken by LISTEN/NOTIFY, also for appends another process makes."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from codeloop.events import UserMessage
from tests.server.conftest import Api


def test_a_session_runs_and_streams_from_postgres(serve: Callable[..., Api], repo: Path,
                                                 script: Path, pg_url: str,
                                                 data_dir: Path) -> None:
    from codeloop.session.store_pg import PostgresEventStore

    # Polling only every 60 s: a prompt wake-up can only come from the NOTIFY.
    api = serve(database_url=pg_url, poll_s=60)
    sid = api.create(repo, script)
    api.wait_status(sid, "finished")
    events = api.events(sid)
    assert events[0]["type"] == "session_started" and events[-1]["type"] == "session_finished"
    assert not (data_dir / "events.sqlite").exists()

    other = PostgresEventStore(pg_url)  # another writer, as a worker process would be
    try:
        assert [e.seq for e in other.read(sid)] == [e["seq"] for e in events]
        last = events[-1]["seq"]
        with api.client.websocket_connect(f"/sessions/{sid}/stream?after={last}",
                                          headers=api.headers) as ws:
            time.sleep(0.3)  # the tail is waiting now
            begin = time.monotonic()
            other.append(sid, [UserMessage(text="from elsewhere")])
            message: dict[str, Any] = ws.receive_json()
            waited = time.monotonic() - begin
        assert message["seq"] == last + 1 and message["event"]["text"] == "from elsewhere"
        assert waited < 5, f"the stream took {waited:.1f} s: the NOTIFY did not wake it"
    finally:
        other.close()
