"""Retries with exponential backoff for retryable model errors, honouring retry-after."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import TypeVar

from codeloop.llm.types import Completion, ModelError, RateLimited

T = TypeVar("T")


def backoff_delay(attempt: int, base: float = 1.0, cap: float = 60.0) -> float:
    """Full-jitter exponential backoff so many sessions do not retry in lockstep."""
    return float(random.uniform(0, min(cap, base * 2**attempt)))


def with_retries(
    call: Callable[[], T],
    max_retries: int,
    on_retry: Callable[[ModelError, int, float], None] | None = None,
    sleep: Callable[[float], None] = time.sleep,
    base_delay: float = 1.0,
) -> tuple[T, int]:
    """Run `call`, retrying retryable ModelErrors; returns the result and the retry count."""
    attempt = 0
    while True:
        try:
            return call(), attempt
        except ModelError as exc:
            if not exc.retryable or attempt >= max_retries:
                raise
            delay = backoff_delay(attempt, base_delay)
            if isinstance(exc, RateLimited) and exc.retry_after is not None:
                delay = min(max(exc.retry_after, 0.0), 300.0)
            if on_retry is not None:
                on_retry(exc, attempt + 1, delay)
            sleep(delay)
            attempt += 1


def complete_with_retries(
    attempt: Callable[[], Completion],
    map_error: Callable[[Exception], ModelError],
    max_retries: int,
    base_delay: float = 1.0,
) -> Completion:
    """One model call with retries: SDK exceptions become typed errors, then retry or raise."""

    def guarded() -> Completion:
        try:
            return attempt()
        except ModelError:
            raise
        except Exception as exc:
            raise map_error(exc) from exc

    completion, retries = with_retries(guarded, max_retries, base_delay=base_delay)
    completion.retries = retries
    return completion
