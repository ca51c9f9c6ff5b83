"""File operations relative to directory fds that never follow a symlink.

Paths are walked one component at a time with O_NOFOLLOW, so a link swapped in between a
check and the use cannot redirect a read or write out of the tree. Writes go to a fresh temp
file that is renamed over the target: a file hard-linked elsewhere is replaced, never changed.
"""

from __future__ import annotations

import errno
import os
import secrets
import shutil
import stat
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress

from codeloop.workspace.errors import UnsafePath

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_CREATE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def split(rel: str) -> list[str]:
    return [p for p in rel.split("/") if p and p != "."]


def open_dir(base_fd: int, parts: Sequence[str], create: bool = False,
             created: list[str] | None = None) -> int:
    """An fd of the directory `parts` below `base_fd`; refuses symlinked or non-dir components."""
    fd = os.dup(base_fd)
    try:
        for i, name in enumerate(parts):
            if name == "..":
                raise UnsafePath(f"path component '..' in {'/'.join(parts)}")
            try:
                nfd = os.open(name, DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                os.mkdir(name, 0o755, dir_fd=fd)
                if created is not None:
                    created.append("/".join(parts[: i + 1]))
                nfd = os.open(name, DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise UnsafePath(
                        f"{'/'.join(parts[: i + 1])} is a symlink or not a directory",
                        "paths are never followed through links",
                    ) from exc
                raise
            os.close(fd)
            fd = nfd
        return fd
    except BaseException:
        os.close(fd)
        raise


@contextmanager
def parent_fd(base_fd: int, rel: str, create: bool = False,
              created: list[str] | None = None) -> Iterator[tuple[int, str]]:
    """Yield (fd of the parent directory, final name) for `rel`; the fd is closed afterwards."""
    parts = split(rel)
    if not parts:
        raise UnsafePath("an empty path names no file")
    fd = open_dir(base_fd, parts[:-1], create, created)
    try:
        yield fd, parts[-1]
    finally:
        os.close(fd)


def lstat_at(base_fd: int, rel: str) -> os.stat_result | None:
    """The lstat of `rel`, or None if it (or a real-directory path to it) does not exist."""
    try:
        with parent_fd(base_fd, rel) as (pfd, name):
            return os.stat(name, dir_fd=pfd, follow_symlinks=False)
    except (FileNotFoundError, UnsafePath):
        return None


def read_at(base_fd: int, rel: str) -> bytes:
    """The bytes of the regular file `rel`; a symlink, FIFO or device raises UnsafePath."""
    with parent_fd(base_fd, rel) as (pfd, name):
        try:
            fd = os.open(name, _READ_FLAGS, dir_fd=pfd)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise UnsafePath(f"{rel} is a symlink", "links are not followed here") from exc
            raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UnsafePath(f"{rel} is not a regular file")
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def readlink_at(base_fd: int, rel: str) -> str:
    with parent_fd(base_fd, rel) as (pfd, name):
        return os.readlink(name, dir_fd=pfd)


def _temp_name(name: str) -> str:
    return f".{name[:200]}.codeloop-{secrets.token_hex(4)}"


def write_file_at(pfd: int, name: str, data: bytes, mode: int) -> None:
    """Replace `name` in `pfd` by a new file holding `data` (temp file + rename)."""
    tmp = _temp_name(name)
    fd = os.open(tmp, _CREATE_FLAGS, 0o600, dir_fd=pfd)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fchmod(fd, mode)
        finally:
            os.close(fd)
        replace_at(pfd, tmp, name)
    except BaseException:
        _unlink_quiet(pfd, tmp)
        raise


def symlink_at(pfd: int, name: str, target: str) -> None:
    """Replace `name` in `pfd` by a symlink to `target` (temp link + rename)."""
    tmp = _temp_name(name)
    os.symlink(target, tmp, dir_fd=pfd)
    try:
        replace_at(pfd, tmp, name)
    except BaseException:
        _unlink_quiet(pfd, tmp)
        raise


def replace_at(pfd: int, src: str, name: str, src_fd: int | None = None) -> None:
    """Rename `src` over `name`; a directory in the way is an error (never removed silently)."""
    try:
        os.rename(src, name, src_dir_fd=pfd if src_fd is None else src_fd, dst_dir_fd=pfd)
    except IsADirectoryError as exc:
        raise UnsafePath(f"{name} is a directory", "remove the directory first") from exc


def remove_at(pfd: int, name: str) -> bool:
    """Remove `name` (a whole tree if a directory, never following links); False if absent."""
    st = _lstat_quiet(pfd, name)
    if st is None:
        return False
    if stat.S_ISDIR(st.st_mode):
        shutil.rmtree(name, dir_fd=pfd)
    else:
        os.unlink(name, dir_fd=pfd)
    return True


def files_below(pfd: int, name: str, prefix: str) -> list[str]:
    """Relative paths of every non-directory under `name` (or `prefix` itself if not a dir)."""
    st = _lstat_quiet(pfd, name)
    if st is None:
        return []
    if not stat.S_ISDIR(st.st_mode):
        return [prefix]
    out: list[str] = []
    fd = os.open(name, DIR_FLAGS, dir_fd=pfd)
    try:
        for child in os.listdir(fd):
            out.extend(files_below(fd, child, f"{prefix}/{child}"))
    finally:
        os.close(fd)
    return out


def _lstat_quiet(pfd: int, name: str) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=pfd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def _unlink_quiet(pfd: int, name: str) -> None:
    with suppress(FileNotFoundError):
        os.unlink(name, dir_fd=pfd)
