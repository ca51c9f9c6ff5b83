"""API requests per minute per tenant: a sliding one-minute window of request times, in
memory for one server process, or in the shared PostgreSQL tenant store for several."""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from typing import Protocol

from codeloop.server.tenant_db import TenantDb

WINDOW_S = 60.0


class Limiter(Protocol):
    def hit(self, key: str, per_minute: int, now: float | None = None) -> int | None: ...


class RateLimiter:
    def __init__(self) -> None:
        self._hits: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def hit(self, key: str, per_minute: int, now: float | None = None) -> int | None:
        """Count a request for `key`; None if it is within `per_minute`, else the whole
        seconds until the oldest request in the window leaves it (for Retry-After)."""
        now = time.monotonic() if now is None else now
        with self._lock:
            hits = self._hits.setdefault(key, deque())
            while hits and hits[0] <= now - WINDOW_S:
                hits.popleft()
            if len(hits) >= per_minute:
                return max(1, math.ceil(hits[0] + WINDOW_S - now))
            hits.append(now)
            return None


class SharedRateLimiter:
    """The same window kept in the shared tenant database, so every server process counts a
    tenant's requests together. Times are wall-clock seconds (the processes share no
    monotonic clock); the tenant's lock makes count-then-insert one step across processes."""

    def __init__(self, db: TenantDb) -> None:
        self.db = db

    def hit(self, key: str, per_minute: int, now: float | None = None) -> int | None:
        now = time.time() if now is None else now
        with self.db.transaction() as sql:
            sql.lock(f"rate:{key}")
            sql.rows("DELETE FROM request_times WHERE tenant = ? AND ts <= ?",
                     (key, now - WINDOW_S))
            count, oldest = sql.rows("SELECT count(*), min(ts) FROM request_times "
                                     "WHERE tenant = ?", (key,))[0]
            if int(count) >= per_minute:
                return max(1, math.ceil(float(oldest) + WINDOW_S - now))
            sql.rows("INSERT INTO request_times (tenant, ts) VALUES (?, ?)", (key, now))
            return None
