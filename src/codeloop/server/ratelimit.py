"""API requests per minute per tenant: a sliding one-minute window of request times."""

from __future__ import annotations

import math
import threading
import time
from collections import deque

WINDOW_S = 60.0


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
