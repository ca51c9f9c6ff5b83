"""What runs on a cluster worker: one session, from its log in the shared PostgreSQL store.

The actor rebuilds the server's session service on the worker (same data directory, roots
and defaults, reached by shared path) and runs the session with the ordinary runner, which
resumes from the log. Stop and pause arrive as actor calls while `run` executes."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from codeloop.config import Settings
from codeloop.server.service import ModelFactory, SessionService
from codeloop.session.control import Control
from codeloop.session.state import fold
from codeloop.session.stores import open_event_store


@dataclass(frozen=True)
class WorkerSpec:
    """What a worker needs to run any of the server's sessions (sent with each placement)."""

    data_dir: Path
    roots: tuple[Path, ...]
    database_url: str
    defaults: Settings | None = None
    model_factory: ModelFactory | None = None


@dataclass(frozen=True)
class RunOutcome:
    """How a run on a worker stopped: the session's status and whether it has ended."""

    status: str
    is_over: bool


class SessionWorker:
    """One session's run on a worker (made a Ray actor by `fleet.sessions`)."""

    def __init__(self, spec: WorkerSpec) -> None:
        self.spec = spec
        self.control = Control()

    def run(self, session_id: str) -> RunOutcome:
        """Run the session until it ends or pauses; the events go to the shared store."""
        store = open_event_store(url=self.spec.database_url)
        try:
            service = SessionService(self.spec.data_dir, store, self.spec.roots,
                                     self.spec.model_factory, defaults=self.spec.defaults,
                                     max_workers=1)
            service._run_session(session_id, self.control)
            state = fold(store.read(session_id))
            return RunOutcome(status=state.status, is_over=state.is_over)
        finally:
            store.close()

    def stop(self) -> None:
        self.control.stop.set()

    def pause(self) -> None:
        self.control.pause.set()
