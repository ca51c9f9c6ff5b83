"""Evaluation instances as Ray tasks: one task per instance, at most N running, spread over
the cluster's nodes; each returns the record the local path makes, yielded as it completes.

A task whose worker or node dies is submitted once more; a second death, or an exception
the task raised, becomes the instance's record with the cause, so no instance is lost.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Hashable, Iterable, Iterator
from typing import Any, TypeVar

from codeloop.eval.dispatch import CAUSE_CHARS, Attempt, finished, lost, raised, take_next
from codeloop.eval.swebench.evaluate import InstanceResult
from codeloop.fleet.cluster import connect, connected, disconnect, ray_module

Item = TypeVar("Item")
Run = TypeVar("Run")


def _on_node(work: Callable[[Item, Run], InstanceResult], item: Item, run: Run) -> InstanceResult:
    """The task body on a worker: the local path's per-instance function, and where it ran."""
    result = work(item, run)
    result.node = ray_module().get_runtime_context().get_node_id()
    return result


def _cause(exc: BaseException) -> str:
    """One line naming what ended an attempt (a task's own exception, not Ray's wrapper)."""
    inner = getattr(exc, "cause", None)
    shown = inner if isinstance(inner, BaseException) else exc
    text = str(shown).strip().splitlines()
    return f"{type(shown).__name__}: {text[0] if text else ''}"[:CAUSE_CHARS]


def dispatch(work: Callable[[Item, Run], InstanceResult], items: Iterable[Item], run: Run,
             blank: Callable[[Item], InstanceResult], workers: int,
             key: Callable[[Item], Hashable] | None = None) -> Iterator[InstanceResult]:
    """`work(item, run)` for every item as Ray tasks, `workers` at a time, each record as it
    completes; `blank(item)` is the record of an item whose task could not finish. `key(item)`
    names a resource two items should not hold at once (`eval.dispatch.take_next`).

    The caller has connected to the cluster (codeloop.fleet.cluster.connect)."""
    ray = ray_module()
    # One CPU each, so a node runs as many instances as it has CPUs; SPREAD puts them on
    # different nodes rather than filling the head first. Retries are ours, not Ray's
    # (max_retries=0), so the record can say which attempts were lost and why.
    task = ray.remote(num_cpus=1, max_retries=0, scheduling_strategy="SPREAD")(_on_node)
    shared = ray.put(run)  # sent to the object store once, not with every task
    queue: deque[Attempt[Item]] = deque(Attempt(item) for item in items)
    running: dict[Any, Attempt[Item]] = {}
    try:
        while queue or running:
            while queue and len(running) < max(workers, 1):
                busy = {key(a.item) for a in running.values()} if key is not None else set()
                attempt = take_next(queue, busy, key)
                running[task.remote(work, attempt.item, shared)] = attempt
            ready, _ = ray.wait(list(running), num_returns=1)
            attempt = running.pop(ready[0])
            record: InstanceResult | None
            try:
                record = finished(attempt, ray.get(ready[0]))
            except ray.exceptions.RayTaskError as exc:
                record = raised(attempt, blank, _cause(exc))
            except ray.exceptions.RayError as exc:  # the worker or its node died
                record = lost(attempt, _cause(exc), queue, blank, "Ray worker")
            if record is not None:
                yield record
    finally:
        # Stopped early (Ctrl-C, an error writing records): nothing keeps running unseen.
        for ref in running:
            ray.cancel(ref, force=True)


def on_cluster(address: str, work: Callable[[Item, Run], InstanceResult], items: Iterable[Item],
               run: Run, blank: Callable[[Item], InstanceResult], workers: int,
               key: Callable[[Item], Hashable] | None = None) -> Iterator[InstanceResult]:
    """`dispatch` on the cluster at `address` ('auto': a local one started here), leaving it
    afterwards unless this process had already joined it."""
    joined = connected()
    connect(address)
    try:
        yield from dispatch(work, items, run, blank, workers, key)
    finally:
        if not joined:
            disconnect()
