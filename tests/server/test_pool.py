"""The worker pool: a per-user limit, and users served in turn beyond it."""

from __future__ import annotations

import asyncio
import threading

from codeloop.server.pool import WorkerPool
from codeloop.session.control import Control


def test_per_user_limit_and_round_robin_across_users() -> None:
    order: list[str] = []
    release: dict[str, threading.Event] = {}

    def job(session_id: str, control: Control) -> None:
        order.append(session_id)
        release[session_id].wait(timeout=30)

    async def scenario() -> list[set[str]]:
        pool = WorkerPool(job, per_user=1, max_workers=2)
        for sid in ("a1", "a2", "a3", "b1", "b2", "c1"):
            release[sid] = threading.Event()
        for sid in ("a1", "a2", "a3"):
            pool.submit(sid, "alice")
        for sid in ("b1", "b2"):
            pool.submit(sid, "bob")
        pool.submit("c1", "carol")
        pool.submit("a1", "alice")  # already running: not queued twice
        snapshots = []
        for sid in ("a1", "b1", "c1", "a2", "b2", "a3"):
            running = {s for s in release if pool.is_running(s)}
            snapshots.append(running)
            assert sid in running
            release[sid].set()
            while pool.is_running(sid):
                await asyncio.sleep(0.005)
        await pool.close()
        return snapshots

    snapshots = asyncio.run(scenario())
    assert snapshots[0] == {"a1", "b1"}, "alice's second session waits: one each"
    assert order == ["a1", "b1", "c1", "a2", "b2", "a3"], "users take turns"
    assert all(len({s[0] for s in running}) == len(running) for running in snapshots)


def test_unqueue_and_close_pause_running_sessions() -> None:
    paused: list[str] = []

    def job(session_id: str, control: Control) -> None:
        control.pause.wait(timeout=30)
        paused.append(session_id)

    async def scenario() -> None:
        pool = WorkerPool(job, per_user=1, max_workers=4)
        pool.submit("a1", "alice")
        pool.submit("a2", "alice")
        assert pool.is_running("a1") and pool.is_queued("a2")
        assert pool.unqueue("a2") and not pool.is_active("a2")
        await pool.close()
        assert not pool.is_running("a1")

    asyncio.run(scenario())
    assert paused == ["a1"]
