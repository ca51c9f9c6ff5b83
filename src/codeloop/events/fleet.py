"""Events of sessions run on a cluster: the worker running one was lost and it moved on."""

from __future__ import annotations

from typing import Literal

from codeloop.events.base import EventBase


class WorkerLost(EventBase):
    """The cluster worker running the session died (`error` says how); `attempt` counts the
    placements so far, and the session is placed again unless `gave_up`."""

    type: Literal["worker_lost"] = "worker_lost"
    attempt: int
    error: str
    gave_up: bool = False
