"""The sliding one-minute window (in memory, and shared in PostgreSQL) and the usual hourly
spend, with explicit clocks."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from codeloop.events import ModelCallFinished
from codeloop.server.access import Access
from codeloop.server.ratelimit import Limiter, RateLimiter, SharedRateLimiter
from codeloop.server.tenants import TenantPolicy, TenantStore
from codeloop.server.usage import UsageMeter, hour_of
from codeloop.session.store import SQLiteEventStore


@pytest.fixture(params=["memory", "postgres"])
def limiter(request: pytest.FixtureRequest) -> Iterator[Limiter]:
    if request.param == "memory":
        yield RateLimiter()
        return
    from codeloop.server.tenant_db import PostgresTenantDb

    db = PostgresTenantDb(request.getfixturevalue("pg_url"))
    yield SharedRateLimiter(db)
    db.close()


def test_window_slides_and_retry_after_counts_down(limiter: Limiter) -> None:
    assert [limiter.hit("t", 2, now=t) for t in (0.0, 10.0)] == [None, None]
    assert limiter.hit("t", 2, now=20.0) == 40, "the request at 0 leaves at 60"
    assert limiter.hit("t", 2, now=59.5) == 1
    assert limiter.hit("other", 2, now=20.0) is None, "each key has its own window"
    assert limiter.hit("t", 2, now=60.0) is None, "the first request has left the window"
    assert limiter.hit("t", 2, now=65.0) == 5


def test_usual_hour_is_the_median_of_hours_with_spend_with_a_floor(tmp_path: Path) -> None:
    tenants = TenantStore(tmp_path)
    tenants.create_tenant("acme", TenantPolicy(alert_floor_usd=0.5))
    tenants.set_member("alice", "acme", "member")
    store = SQLiteEventStore(tmp_path / "events.sqlite")
    store.create("s1", owner="alice")
    now = time.time()
    hours = {2: 1.0, 3: 4.0, 5: 2.0, 8 * 24: 100.0}  # hours ago -> dollars; the last is too old
    store.append("s1", [ModelCallFinished(step=i, model="m", cost_usd=usd, ts=now - h * 3600)
                        for i, (h, usd) in enumerate(hours.items())])
    meter = UsageMeter(store, Access(tenants))
    assert meter.usual_hourly("acme", now) == 2.0
    assert hour_of(now - 8 * 24 * 3600) not in meter.hourly_spend("acme", now)
    tenants.set_policy("acme", TenantPolicy(alert_floor_usd=3.0))
    assert meter.usual_hourly("acme", now) == 3.0
    store.append("s1", [ModelCallFinished(step=9, model="m", cost_usd=6.5, ts=now)])
    alert = meter.check_alert("acme", now)
    assert alert is not None and (alert.spend_usd, alert.usual_usd) == (6.5, 3.0)
    assert meter.check_alert("acme", now) is None, "once per hour"
