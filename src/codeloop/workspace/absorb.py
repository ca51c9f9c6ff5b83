"""Merge a kernel overlayfs upper layer into the merged view, by rename.

The upper layer of an overlay records what a command changed: new or copied-up files,
new directories, whiteouts (character devices 0/0) for deletions and an `overlay.opaque`
xattr on a directory that replaced the lower one. Changes under `.git` and special files
(FIFOs, sockets, devices) are dropped: the session may not keep them.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

from codeloop.workspace import fsops
from codeloop.workspace.errors import WorkspaceError

_XATTR_PREFIXES = ("trusted.overlay.", "user.overlay.")


@dataclass
class AbsorbReport:
    changed: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)


def _xattr(dir_fd: int, name: str, key: str) -> bytes | None:
    path = f"/proc/self/fd/{dir_fd}/{name}"
    for prefix in _XATTR_PREFIXES:
        try:
            return os.getxattr(path, prefix + key, follow_symlinks=False)
        except OSError:
            continue
    return None


def _is_whiteout(ufd: int, name: str, st: os.stat_result) -> bool:
    if stat.S_ISCHR(st.st_mode) and st.st_rdev == 0:
        return True
    return (stat.S_ISREG(st.st_mode) and st.st_size == 0
            and _xattr(ufd, name, "whiteout") is not None)


def absorb_upper(upper_fd: int, merged_fd: int) -> AbsorbReport:
    report = AbsorbReport()
    _absorb_dir(upper_fd, merged_fd, "", report)
    return report


def _absorb_dir(ufd: int, mfd: int, prefix: str, report: AbsorbReport) -> None:
    for name in sorted(os.listdir(ufd)):
        rel = prefix + name
        st = os.stat(name, dir_fd=ufd, follow_symlinks=False)
        if name.lower() == ".git":
            report.dropped.append(rel)
        elif _is_whiteout(ufd, name, st):
            gone = fsops.files_below(mfd, name, rel)
            if fsops.remove_at(mfd, name):
                report.changed.extend(gone)
        elif stat.S_ISDIR(st.st_mode):
            _absorb_subdir(ufd, mfd, name, rel, st, report)
        elif stat.S_ISREG(st.st_mode):
            _clear(mfd, name, rel, report)
            _absorb_file(ufd, mfd, name, st)
            report.changed.append(rel)
        elif stat.S_ISLNK(st.st_mode):
            _clear(mfd, name, rel, report)
            target = os.readlink(name, dir_fd=ufd)
            _move(ufd, mfd, name, partial(fsops.symlink_at, mfd, name, target))
            report.changed.append(rel)
        else:
            report.dropped.append(rel)


def _clear(mfd: int, name: str, rel: str, report: AbsorbReport) -> None:
    """Remove a directory that a file or symlink from the upper layer replaces."""
    existing = fsops.lstat_at(mfd, name)
    if existing is not None and stat.S_ISDIR(existing.st_mode):
        report.changed.extend(fsops.files_below(mfd, name, rel))
        fsops.remove_at(mfd, name)


def _absorb_subdir(ufd: int, mfd: int, name: str, rel: str, st: os.stat_result,
                   report: AbsorbReport) -> None:
    if _xattr(ufd, name, "redirect") is not None:
        raise WorkspaceError(
            f"the overlay upper layer renames directory {rel} by redirect",
            "mount the overlay without redirect_dir (bwrap's default in a user namespace)",
        )
    existing = fsops.lstat_at(mfd, name)
    opaque = _xattr(ufd, name, "opaque") == b"y"
    if existing is not None and (opaque or not stat.S_ISDIR(existing.st_mode)):
        report.changed.extend(fsops.files_below(mfd, name, rel))
        fsops.remove_at(mfd, name)
        existing = None
    # The host must be able to walk what a command left, whatever modes it set.
    mode = stat.S_IMODE(st.st_mode) & 0o777 | 0o700
    if stat.S_IMODE(st.st_mode) & 0o700 != 0o700:
        os.chmod(name, mode, dir_fd=ufd)  # a directory (lstat above); the layer is quiescent
    if existing is None:
        os.mkdir(name, mode, dir_fd=mfd)
    sub_u = os.open(name, fsops.DIR_FLAGS, dir_fd=ufd)
    try:
        sub_m = os.open(name, fsops.DIR_FLAGS, dir_fd=mfd)
        try:
            if stat.S_IMODE(os.fstat(sub_m).st_mode) != mode:
                os.fchmod(sub_m, mode)
            _absorb_dir(sub_u, sub_m, rel + "/", report)
        finally:
            os.close(sub_m)
    finally:
        os.close(sub_u)


def _absorb_file(ufd: int, mfd: int, name: str, st: os.stat_result) -> None:
    mode = stat.S_IMODE(st.st_mode) | 0o400  # readable by the host for diff and apply
    if mode != stat.S_IMODE(st.st_mode):
        os.chmod(name, mode, dir_fd=ufd)  # a regular file (lstat above); the layer is quiescent
    if _xattr(ufd, name, "metacopy") is not None:
        # A metadata-only copy-up: the data is still the lower file's.
        fsops.write_file_at(mfd, name, fsops.read_at(mfd, name), mode)
        return
    _move(ufd, mfd, name, partial(_copy_file, ufd, mfd, name, mode))


def _copy_file(ufd: int, mfd: int, name: str, mode: int) -> None:
    fsops.write_file_at(mfd, name, fsops.read_at(ufd, name), mode)


def _move(ufd: int, mfd: int, name: str, copy: Callable[[], None]) -> None:
    """Rename from the upper layer; across filesystems, fall back to `copy`."""
    try:
        fsops.replace_at(mfd, name, name, src_fd=ufd)
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise
        copy()
