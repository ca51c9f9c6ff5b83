"""The shared tenant database's concurrency: two stores on one PostgreSQL database stand for
two server processes (each its own pool, so its own server sessions and advisory locks)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from codeloop.server.ratelimit import SharedRateLimiter
from codeloop.server.tenant_db import NamedLock, PostgresTenantDb


@pytest.fixture
def two(pg_url: str) -> Iterator[tuple[PostgresTenantDb, PostgresTenantDb]]:
    first, second = PostgresTenantDb(pg_url), PostgresTenantDb(pg_url)
    yield first, second
    first.close()
    second.close()


def test_a_named_lock_held_by_one_process_waits_the_other(
        two: tuple[PostgresTenantDb, PostgresTenantDb]) -> None:
    held, released = threading.Event(), threading.Event()
    order: list[str] = []

    def holder() -> None:
        with NamedLock(two[0], "admission"):
            order.append("first in")
            held.set()
            released.wait(10)
            order.append("first out")

    thread = threading.Thread(target=holder)
    thread.start()
    assert held.wait(10)
    timer = threading.Timer(0.5, released.set)
    timer.start()
    with NamedLock(two[1], "admission"):
        order.append("second in")
    thread.join()
    assert order == ["first in", "first out", "second in"]
    with NamedLock(two[1], "another name"):  # other names are not held up
        pass


def test_requests_racing_on_two_processes_never_pass_the_limit(
        two: tuple[PostgresTenantDb, PostgresTenantDb]) -> None:
    limiters = [SharedRateLimiter(db) for db in two]
    now = time.time()
    results: list[int | None] = []
    lock = threading.Lock()

    def hit(limiter: SharedRateLimiter) -> None:
        for _ in range(5):
            got = limiter.hit("acme", 7, now=now)
            with lock:
                results.append(got)

    threads = [threading.Thread(target=hit, args=(limiters[i % 2],)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 30
    assert results.count(None) == 7, "exactly the limit got through"
    assert limiters[0].hit("globex", 7, now=now) is None, "each tenant has its own window"
