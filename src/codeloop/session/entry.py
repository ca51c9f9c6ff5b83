"""What a command needs before any session runs: the event store, a session's directory and
the repository checked. Kept apart from session.setup so that listing or showing sessions
never loads the code index, the sandbox or the tools."""

from __future__ import annotations

from pathlib import Path

from codeloop.config import data_dir
from codeloop.errors import CodeloopError
from codeloop.session.store import EventStore
from codeloop.session.stores import open_event_store


class RepositoryError(CodeloopError):
    """The repository path is missing or unusable."""


def open_store(base: Path | None = None) -> EventStore:
    return open_event_store(base)


def session_dir(session_id: str, base: Path | None = None) -> Path:
    return (base or data_dir()) / "sessions" / session_id


def check_repo(repo: Path) -> Path:
    if not repo.exists():
        raise RepositoryError(f"repository path {repo} does not exist",
                              "pass --repo PATH pointing at a directory")
    if not repo.is_dir():
        raise RepositoryError(f"repository path {repo} is not a directory",
                              "pass --repo PATH pointing at a directory")
    return repo.resolve()
