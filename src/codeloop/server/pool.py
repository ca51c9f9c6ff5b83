"""The worker pool: sessions run as asyncio tasks (the synchronous runner in a thread), at
most `per_user` at once for each user, queued beyond that and started by user in turn."""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from codeloop.session.control import Control

log = logging.getLogger(__name__)

Job = Callable[[str, Control], None]


@dataclass
class _Running:
    owner: str
    control: Control
    task: asyncio.Task[None]


@dataclass
class WorkerPool:
    """Schedules session runs; `job(session_id, control)` runs in a worker thread."""

    job: Job
    per_user: int = 2
    max_workers: int = 16
    _queues: dict[str, deque[str]] = field(default_factory=dict)
    _order: deque[str] = field(default_factory=deque)
    _running: dict[str, _Running] = field(default_factory=dict)
    _executor: ThreadPoolExecutor | None = None
    _closing: bool = False

    def __post_init__(self) -> None:
        # Our own executor: the default one has too few threads for many sessions.
        self._executor = ThreadPoolExecutor(max_workers=self.max_workers,
                                            thread_name_prefix="codeloop-session")

    @property
    def closing(self) -> bool:
        return self._closing

    # -- state ---------------------------------------------------------------------------

    def is_running(self, session_id: str) -> bool:
        return session_id in self._running

    def is_queued(self, session_id: str) -> bool:
        return any(session_id in q for q in self._queues.values())

    def is_active(self, session_id: str) -> bool:
        return self.is_running(session_id) or self.is_queued(session_id)

    def control(self, session_id: str) -> Control | None:
        running = self._running.get(session_id)
        return running.control if running else None

    def running_count(self, owner: str) -> int:
        return sum(1 for r in self._running.values() if r.owner == owner)

    # -- scheduling ----------------------------------------------------------------------

    def submit(self, session_id: str, owner: str) -> None:
        """Queue a session to run (no-op if it is already queued or running)."""
        if self._closing or self.is_active(session_id):
            return
        if owner not in self._queues:
            # A user never served yet goes first among those waiting.
            self._queues[owner] = deque()
            self._order.appendleft(owner)
        self._queues[owner].append(session_id)
        self._dispatch()

    def unqueue(self, session_id: str) -> bool:
        """Take a queued (not yet running) session off its queue; True if it was queued."""
        for queue in self._queues.values():
            if session_id in queue:
                queue.remove(session_id)
                return True
        return False

    def _dispatch(self) -> None:
        """Start queued sessions while slots are free, the least recently served user first."""
        while len(self._running) < self.max_workers:
            owner = next((o for o in self._order
                          if self._queues[o] and self.running_count(o) < self.per_user), None)
            if owner is None:
                return
            self._order.remove(owner)
            self._order.append(owner)
            self._start(self._queues[owner].popleft(), owner)

    def _start(self, session_id: str, owner: str) -> None:
        control = Control()
        task = asyncio.get_running_loop().create_task(self._run(session_id, control))
        self._running[session_id] = _Running(owner, control, task)

    async def _run(self, session_id: str, control: Control) -> None:
        try:
            await asyncio.get_running_loop().run_in_executor(
                self._executor, self.job, session_id, control)
        except Exception:  # one broken session must not take the pool down
            log.exception("session %s failed", session_id)
        finally:
            self._running.pop(session_id, None)
            if not self._closing:
                self._dispatch()

    async def close(self, timeout: float = 30.0) -> None:
        """Pause every running session at its next step boundary and wait for the threads."""
        self._closing = True
        self._queues.clear()
        tasks = [r.task for r in self._running.values()]
        for running in self._running.values():
            running.control.pause.set()
        if tasks:
            await asyncio.wait(tasks, timeout=timeout)
        assert self._executor is not None
        self._executor.shutdown(wait=False, cancel_futures=True)
