"""Evaluation items in local processes: one process per item, at most N at once, each record
yielded as it completes. The Ray dispatcher's rules hold here too: an item whose process dies
(killed, out of memory) is started once more, a second death or an exception the item raised
becomes its record with the cause, so no item is lost and a death never ends the run.

A process of its own per item (not a shared pool) so that a death is the dying item's alone:
a `ProcessPoolExecutor` breaks every pending future when one worker dies."""

from __future__ import annotations

import contextlib
import multiprocessing
import signal
from collections import deque
from collections.abc import Callable, Hashable, Iterable, Iterator
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from typing import Any, Generic, TypeVar

from codeloop.eval.dispatch import CAUSE_CHARS, Attempt, finished, lost, raised, take_next
from codeloop.eval.swebench.evaluate import InstanceResult

Item = TypeVar("Item")
Run = TypeVar("Run")

# Forked, as the process pool before it was: a child starts at once with everything the
# parent imported and its current environment (a spawned one would import codeloop again,
# about 1.5 s of CPU per item).
_CONTEXT = multiprocessing.get_context("fork")
_JOIN_S = 30.0


def _child(work: Callable[[Item, Run], InstanceResult], item: Item, run: Run,
           conn: Connection) -> None:
    """The item in the child: its record, or the exception it raised, sent back."""
    try:
        result = work(item, run)
    except BaseException as exc:  # the item's own failure is its record, sent as a cause
        conn.send(("raised", f"{type(exc).__name__}: {str(exc).strip()[:CAUSE_CHARS]}"))
    else:
        conn.send(("done", result))
    finally:
        conn.close()


@dataclass
class _Running(Generic[Item]):
    attempt: Attempt[Item]
    process: BaseProcess
    conn: Connection
    key: Hashable


def _death(process: BaseProcess) -> str:
    """One line naming how a child ended without sending its record."""
    code = process.exitcode
    if code is not None and code < 0:
        try:
            return f"the worker process was killed by {signal.Signals(-code).name}"
        except ValueError:
            pass
    return f"the worker process exited with status {code} before sending its record"


def _outcome(running: _Running[Any]) -> tuple[str, Any] | None:
    """What the child sent (None when it died first); the child is joined either way."""
    message: tuple[str, Any] | None = None
    # Readable with nothing to read: the child closed the pipe by dying.
    if running.conn.poll():
        with contextlib.suppress(EOFError, OSError):
            message = running.conn.recv()
    running.process.join(_JOIN_S)
    if running.process.is_alive():
        running.process.kill()
        running.process.join()
    running.conn.close()
    return message


def dispatch_local(work: Callable[[Item, Run], InstanceResult], items: Iterable[Item], run: Run,
                   blank: Callable[[Item], InstanceResult], workers: int,
                   key: Callable[[Item], Hashable] | None = None) -> Iterator[InstanceResult]:
    """`work(item, run)` for every item in processes of their own, `workers` at a time, each
    record as it completes; `blank(item)` is the record of an item that could not finish.
    `key(item)` names a resource two items should not hold at once (see `take_next`)."""
    queue: deque[Attempt[Item]] = deque(Attempt(item) for item in items)
    running: list[_Running[Item]] = []
    try:
        while queue or running:
            while queue and len(running) < max(workers, 1):
                attempt = take_next(queue, {r.key for r in running}, key)
                receiver, sender = _CONTEXT.Pipe(duplex=False)
                # Not a daemon: an item may start processes of its own (daemons may not).
                process = _CONTEXT.Process(target=_child, args=(work, attempt.item, run, sender))
                process.start()
                sender.close()  # the child holds the only sending end: EOF when it dies
                running.append(_Running(attempt, process, receiver,
                                        key(attempt.item) if key is not None else None))
            # The pipe, not the process's exit: a large record fills the pipe's buffer and its
            # child waits for this end to read before it can exit.
            ready = set(wait([r.conn for r in running]))
            for done in [r for r in running if r.conn in ready]:
                running.remove(done)
                message = _outcome(done)
                if message is None:
                    record = lost(done.attempt, _death(done.process), queue, blank,
                                  "worker process")
                elif message[0] == "done":
                    record = finished(done.attempt, message[1])
                else:
                    record = raised(done.attempt, blank, message[1])
                if record is not None:
                    yield record
    finally:
        # Stopped early (Ctrl-C, an error writing records): nothing keeps running unseen.
        for left in running:
            left.process.kill()
            left.process.join()
            left.conn.close()
