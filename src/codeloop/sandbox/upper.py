"""Making a command's overlay upper layer safe to merge back into the workspace."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path


def sanitize_upper(upper: Path) -> list[str]:
    """Strip setuid/setgid bits and drop special files other than overlay whiteouts.

    Returns the relative paths that were changed, for the command's notes.
    """
    changed: list[str] = []
    for dirpath, dirnames, filenames in os.walk(upper):
        for name in [*dirnames, *filenames]:
            full = os.path.join(dirpath, name)
            st = os.lstat(full)
            rel = os.path.relpath(full, upper)
            mode = st.st_mode
            if stat.S_ISCHR(mode) and st.st_rdev == 0:
                continue  # an overlay whiteout: a deletion the workspace must apply
            if (
                stat.S_ISCHR(mode)
                or stat.S_ISBLK(mode)
                or stat.S_ISFIFO(mode)
                or stat.S_ISSOCK(mode)
            ):
                os.unlink(full)
                changed.append(f"removed special file {rel}")
            elif not stat.S_ISLNK(mode) and mode & (stat.S_ISUID | stat.S_ISGID):
                os.chmod(full, stat.S_IMODE(mode) & ~(stat.S_ISUID | stat.S_ISGID))
                changed.append(f"cleared setuid/setgid on {rel}")
    return changed


def remove_tree(path: Path) -> None:
    """Delete a run's scratch, including the kernel's mode-000 overlay `work/work` dir."""
    for dirpath, dirnames, _files in os.walk(path):
        for name in dirnames:
            full = os.path.join(dirpath, name)
            if not os.path.islink(full):
                os.chmod(full, 0o700)
    shutil.rmtree(path, ignore_errors=True)
