"""What running evaluation items N at a time needs, wherever they run (local processes,
`eval/local_dispatch.py`; Ray tasks, `fleet/eval_dispatch.py`): an item's attempts, the
rules that turn how an attempt ended into its record or a retry, and which queued item goes
next."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Collection, Hashable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from codeloop.eval.swebench.evaluate import InstanceResult

Item = TypeVar("Item")

# An item is started at most this many times more after its worker process died.
RETRIES = 1
CAUSE_CHARS = 300


@dataclass
class Attempt(Generic[Item]):
    """One item and why each of its earlier attempts was lost."""

    item: Item
    lost: list[str] = field(default_factory=list)


def _failed(result: InstanceResult, attempt: Attempt[Item], reason: str) -> InstanceResult:
    """`result` (the item's blank record) as the record of an item that could not finish."""
    result.outcome, result.reason, result.lost_attempts = "env_unavailable", reason, attempt.lost
    return result


def finished(attempt: Attempt[Item], result: InstanceResult) -> InstanceResult:
    """The record an attempt returned, with the earlier attempts' losses."""
    result.lost_attempts = attempt.lost
    return result


def raised(attempt: Attempt[Item], blank: Callable[[Item], InstanceResult],
           cause: str) -> InstanceResult:
    """The record of an item whose own code raised: it is not run again (it would raise again)."""
    return _failed(blank(attempt.item), attempt, f"the task raised {cause}")


def lost(attempt: Attempt[Item], cause: str, queue: deque[Attempt[Item]],
         blank: Callable[[Item], InstanceResult], worker: str) -> InstanceResult | None:
    """An attempt whose `worker` died: queued again at the front (None) while retries are
    left, else the item's record with the last cause."""
    attempt.lost.append(cause)
    if len(attempt.lost) <= RETRIES:
        queue.appendleft(attempt)
        return None
    return _failed(blank(attempt.item), attempt,
                   f"its {worker} died {len(attempt.lost)} times; the last: {attempt.lost[-1]}")


def take_next(queue: deque[Attempt[Item]], busy: Collection[Hashable],
              key: Callable[[Item], Hashable] | None) -> Attempt[Item]:
    """The first queued attempt whose key no running item holds, else the first: two SWE-bench
    instances of one environment would wait on its lock (`TaskEnv.exclusive`) for each other
    while an instance of another environment could run."""
    if key is not None and busy:
        for i, attempt in enumerate(queue):
            if key(attempt.item) not in busy:
                del queue[i]
                return attempt
    return queue.popleft()
