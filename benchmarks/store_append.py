"""Append latency of the event store, SQLite vs PostgreSQL: p50/p99 of one single-event
append of a session-like mix, through the store the factory opens. PostgreSQL is measured
as the store runs it (synchronous_commit off, like SQLite's synchronous=NORMAL) and fully
durable (the URL asks for synchronous_commit on: every append waits for an fsync).

Usage: python benchmarks/store_append.py [--appends N] [--url postgresql://...]
Without --url (or CODELOOP_TEST_DATABASE_URL) a throw-away cluster is started with the
Debian binaries (fsync on, the server's defaults), on 127.0.0.1.
Goal: PostgreSQL append p50 < 5 ms.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from event_store import pct, realistic_events
from tests.pg import fresh_database, postgres_server

from codeloop.session.store import EventStore
from codeloop.session.stores import open_event_store


def timed_appends(store: EventStore, n: int) -> list[float]:
    store.create("bench")
    times = []
    for event in realistic_events(n):
        begin = time.perf_counter()
        store.append("bench", [event])
        times.append((time.perf_counter() - begin) * 1000)
    assert store.get("bench").last_seq == n
    return times


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--appends", type=int, default=2000)
    parser.add_argument("--url", default="", help="an admin URL of a PostgreSQL server")
    args = parser.parse_args()
    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        sqlite = open_event_store(tmp, url=None)
        sqlite_times = timed_appends(sqlite, args.appends)
        sqlite.close()
        admin = args.url or stack.enter_context(postgres_server(durable=True))
        url = stack.enter_context(fresh_database(admin))
        pg = open_event_store(url=url)
        pg_times = timed_appends(pg, args.appends)
        pg.close()
        durable_url = stack.enter_context(fresh_database(admin)) + \
            "?options=-csynchronous_commit%3Don"
        durable = open_event_store(url=durable_url)
        durable_times = timed_appends(durable, max(args.appends // 4, 1))
        durable.close()
    result = {
        "pg_append_p50_ms": round(statistics.median(pg_times), 3),
        "pg_append_p99_ms": round(pct(pg_times, 0.99), 3),
        "pg_durable_append_p50_ms": round(statistics.median(durable_times), 3),
        "pg_durable_append_p99_ms": round(pct(durable_times, 0.99), 3),
        "sqlite_append_p50_ms": round(statistics.median(sqlite_times), 3),
        "sqlite_append_p99_ms": round(pct(sqlite_times, 0.99), 3),
    }
    print(f"{args.appends} single-event appends each")
    print(f"PostgreSQL: p50 {result['pg_append_p50_ms']} ms, p99 {result['pg_append_p99_ms']} ms")
    print(f"PostgreSQL, every commit fsynced ({len(durable_times)} appends): p50 "
          f"{result['pg_durable_append_p50_ms']} ms, p99 {result['pg_durable_append_p99_ms']} ms")
    print(f"SQLite:     p50 {result['sqlite_append_p50_ms']} ms, "
          f"p99 {result['sqlite_append_p99_ms']} ms")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
