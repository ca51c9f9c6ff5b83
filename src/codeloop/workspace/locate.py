"""Where sessions keep their data: the event store and each session's workspace state."""

from __future__ import annotations

import os
from pathlib import Path

from codeloop.errors import SessionNotFound


def data_dir() -> Path:
    """`$CODELOOP_DATA_DIR`, else `$XDG_DATA_HOME/codeloop`, else `~/.local/share/codeloop`."""
    explicit = os.environ.get("CODELOOP_DATA_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_DATA_HOME")
    if xdg:
        return Path(xdg).expanduser() / "codeloop"
    return Path.home() / ".local" / "share" / "codeloop"


def event_store_path() -> Path:
    return data_dir() / "events.sqlite"


def session_workspace_dir(session_id: str) -> Path:
    """`<data>/sessions/<id>/workspace`; the id may not name another directory."""
    if not session_id or "/" in session_id or session_id in (".", "..") or "\x00" in session_id:
        raise SessionNotFound(f"invalid session id {session_id!r}", "`codeloop sessions` lists them")
    return data_dir() / "sessions" / session_id / "workspace"
