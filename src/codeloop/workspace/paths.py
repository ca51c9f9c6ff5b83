"""Confine tool-supplied paths to the workspace root."""

from __future__ import annotations

import os
from pathlib import Path

from codeloop.errors import PathOutsideWorkspace


def confine(root: Path, user_path: str) -> Path:
    """Resolve `user_path` inside `root`; refuse `..`, outside absolutes, `~` and escaping symlinks.

    The returned path has every existing symlink resolved, so a later open of it cannot be
    redirected by a link that was checked here (callers still open with O_NOFOLLOW where a
    swap between check and use matters).
    """
    if "\x00" in user_path:
        raise PathOutsideWorkspace(f"path {user_path!r} contains a NUL byte")
    if user_path.startswith("~"):
        raise PathOutsideWorkspace(
            f"path {user_path!r} points into a home directory",
            "use a path relative to the repository root",
        )
    root_real = Path(os.path.realpath(root))
    candidate = Path(user_path)
    if not candidate.is_absolute():
        candidate = root_real / candidate
    resolved = Path(os.path.realpath(candidate))
    if resolved != root_real and root_real not in resolved.parents:
        lexical = Path(os.path.normpath(candidate))
        if lexical == root_real or root_real in lexical.parents:
            raise PathOutsideWorkspace(
                f"path {user_path!r} goes through a symlink that leads outside the repository",
                "links leading out of the repository are never followed; use a path inside it",
            )
        raise PathOutsideWorkspace(
            f"path {user_path!r} is outside the repository",
            "use a path relative to the repository root; links leading out are not followed",
        )
    return resolved


def relative(root: Path, path: Path) -> str:
    """The repository-relative POSIX form of an already-confined path."""
    rel = Path(os.path.realpath(path)).relative_to(Path(os.path.realpath(root)))
    return rel.as_posix() or "."
