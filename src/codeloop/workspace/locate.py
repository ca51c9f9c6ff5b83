"""Where sessions keep their data: the event store and each session's workspace state."""

from __future__ import annotations

from pathlib import Path

from codeloop.config import data_dir
from codeloop.errors import SessionNotFound


def event_store_path() -> Path:
    return data_dir() / "events.sqlite"


def session_workspace_dir(session_id: str) -> Path:
    """`<data>/sessions/<id>/workspace`; the id may not name another directory."""
    if not session_id or "/" in session_id or session_id in (".", "..") or "\x00" in session_id:
        raise SessionNotFound(f"invalid session id {session_id!r}", "`codeloop sessions` lists them")
    return data_dir() / "sessions" / session_id / "workspace"
