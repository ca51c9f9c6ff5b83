"""Paths only their owner may read: the data directory (0700) and the files in it that hold
every session's log, the server's tokens and trust decisions (0600). They are created that
way; an existing looser mode is tightened, with a note on standard error."""

from __future__ import annotations

import contextlib
import logging
import os
import stat
from pathlib import Path

log = logging.getLogger(__name__)

DIR_MODE = 0o700
FILE_MODE = 0o600


def private_dir(path: Path) -> Path:
    """Create `path` (mode 0700) if missing, or tighten it; returns `path`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileExistsError):
        path.mkdir(mode=DIR_MODE)
    tighten(path, DIR_MODE)
    return path


def private_file(path: Path) -> Path:
    """Create `path` empty (mode 0600) if missing, or tighten it; returns `path`."""
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE))
    tighten(path, FILE_MODE)
    return path


def tighten(path: Path, mode: int) -> None:
    """Drop every permission bit outside `mode` from an existing `path` (a note says so)."""
    try:
        current = stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        return
    if not current & ~mode:
        return
    try:
        os.chmod(path, current & mode)
    except OSError as exc:
        log.warning("note: %s is mode %04o and could not be made %04o (%s); other users may "
                    "read it", path, current, current & mode, exc.strerror)
        return
    log.warning("note: %s was mode %04o; made it %04o, since it holds session logs or tokens",
                path, current, current & mode)
