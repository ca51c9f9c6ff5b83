"""Serving on Ray: the server's pool places each session as an actor on any node, relays
stop and pause to it, and places it again when its worker dies, resuming from the log."""

from __future__ import annotations

import logging
import threading

from codeloop.errors import FleetError
from codeloop.events import SessionPaused, WorkerLost
from codeloop.fleet.cluster import connect, ray_module
from codeloop.fleet.worker import RunOutcome, SessionWorker, WorkerSpec
from codeloop.server.service import SERVER_SHUTDOWN, SessionService
from codeloop.session.control import Control
from codeloop.session.state import fold

log = logging.getLogger(__name__)

# Placements of one run before the session is paused for a person to look at: a session
# that kills every worker it lands on must not take the cluster down one node at a time.
ATTEMPTS = 3
POLL_S = 0.2
RELAY_S = 10.0  # how long a pause or stop request waits for the worker to take it


class RaySessions:
    """The pool's job under `serve --ray`: `(session_id, control)` runs the session remotely."""

    def __init__(self, service: SessionService, spec: WorkerSpec,
                 attempts: int = ATTEMPTS) -> None:
        self.ray = ray_module()
        self.service = service
        self.spec = spec
        self.attempts = attempts
        self.actor_class = self.ray.remote(SessionWorker)

    def __call__(self, session_id: str, control: Control) -> None:
        store = self.service.store
        for attempt in range(1, self.attempts + 1):
            outcome = self._place(session_id, control)
            if isinstance(outcome, RunOutcome):
                if (self.service.pool.closing and outcome.status == "paused"
                        and not outcome.is_over):
                    store.append(session_id, [SessionPaused(reason=SERVER_SHUTDOWN)])
                return
            # The worker is gone, so nobody else writes to the log now: note the loss and,
            # unless the session happened to end first, place it again from its log.
            if fold(store.read(session_id)).is_over:
                return
            gave_up = attempt == self.attempts
            log.warning("session %s lost its worker (attempt %d): %s", session_id, attempt,
                        outcome)
            store.append(session_id, [WorkerLost(attempt=attempt, error=outcome,
                                                 gave_up=gave_up)])
            if gave_up:
                store.append(session_id, [SessionPaused(
                    reason=f"its cluster worker was lost {attempt} times; resume it to retry")])

    def _place(self, session_id: str, control: Control) -> RunOutcome | str:
        """Run once on a fresh actor; the outcome, or why the worker died."""
        ray = self.ray
        actor = self.actor_class.options(num_cpus=1, max_concurrency=4, max_restarts=0,
                                         max_task_retries=0).remote(self.spec)
        ref = actor.run.remote(session_id)
        relayed: set[str] = set()
        lock = threading.Lock()  # the API's thread and this one both relay

        def relay(name: str) -> None:
            # Wait for the actor to take it: the API answers "paused" only once the worker
            # knows, so the step it is in is its last. A dead actor is the loop's business.
            with lock:
                if name in relayed:
                    return
                relayed.add(name)
                try:
                    ray.get(getattr(actor, name).remote(), timeout=RELAY_S)
                except (ray.exceptions.RayError, TimeoutError) as exc:
                    log.warning("could not pass %s to session %s: %s", name, session_id,
                                _first_line(exc))

        control.forward = relay
        try:
            while not ray.wait([ref], timeout=POLL_S)[0]:
                # A request made before `forward` was set is passed on here.
                for name, flag in (("stop", control.stop), ("pause", control.pause)):
                    if flag.is_set():
                        relay(name)
            outcome: RunOutcome = ray.get(ref)
            return outcome
        except ray.exceptions.RayActorError as exc:
            return _first_line(exc)
        finally:
            control.forward = None
            ray.kill(actor, no_restart=True)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:300]


def require_database_url(database_url: str | None) -> str:
    """The PostgreSQL URL workers write to; SQLite cannot be shared across nodes."""
    if not database_url:
        raise FleetError("--ray needs the event log in PostgreSQL, which workers on other "
                         "nodes write to", hint="set CODELOOP_DATABASE_URL=postgresql://…")
    return database_url


def serve_on_ray(service: SessionService, address: str, database_url: str | None) -> None:
    """Make `service` run its sessions on the Ray cluster at `address` ('auto': a local one)."""
    database_url = require_database_url(database_url)
    connect(address)
    spec = WorkerSpec(data_dir=service.data_dir, roots=tuple(service.roots),
                      database_url=database_url, defaults=service.defaults,
                      model_factory=service.model_factory)
    service.pool.job = RaySessions(service, spec)
