"""The host's one way to touch files under a workspace or a repository: no link is followed.

Everything on the host that reads, stats, lists or writes a path a repository, a model or a
sandboxed command controls goes through `SafeRoot`. The root itself is trusted (the user
named it, or it is ours); below it, every component is opened with `openat2`'s
`RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS` where the kernel has it, otherwise one component at
a time with `O_NOFOLLOW` (fsops). A symlink anywhere on the way is `UnsafePath`, so a link
planted in the workspace never redirects a host read or write, and a swap between a check
and the use cannot either. Writes are atomic and never write through a link or a hard link:
a fresh `O_EXCL` temp file is renamed over the target.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import os
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from codeloop.workspace import fsops
from codeloop.workspace.errors import UnsafePath

_SYS_OPENAT2 = 437  # the same number on every Linux architecture (added in 5.6)
_RESOLVE_NO_MAGICLINKS = 0x02
_RESOLVE_NO_SYMLINKS = 0x04
_RESOLVE_BENEATH = 0x08
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64),
                ("resolve", ctypes.c_uint64)]


def _load_syscall() -> Callable[..., int] | None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fn: Callable[..., int] = libc.syscall
    except (OSError, AttributeError):
        return None
    return fn


_syscall = _load_syscall()
_openat2_works: bool | None = None  # learnt on first use; None = not tried yet


@functools.cache
def _how(flags: int) -> _OpenHow:
    return _OpenHow(flags, 0, _RESOLVE_BENEATH | _RESOLVE_NO_SYMLINKS | _RESOLVE_NO_MAGICLINKS)


def _openat2(dir_fd: int, rel: str, flags: int) -> int | None:
    """An fd for `rel` beneath `dir_fd` with no symlink on the way; None without openat2."""
    global _openat2_works
    if _syscall is None or _openat2_works is False:
        return None
    how = _how(flags)
    fd = _syscall(ctypes.c_long(_SYS_OPENAT2), ctypes.c_int(dir_fd),
                  ctypes.c_char_p(os.fsencode(rel)), ctypes.byref(how),
                  ctypes.c_size_t(ctypes.sizeof(how)))
    if fd >= 0:
        _openat2_works = True
        return int(fd)
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EPERM) and _openat2_works is None:
        # ENOSYS: an old kernel; EPERM: a seccomp filter that refuses the call outright.
        _openat2_works = False
        return None
    if err in (errno.ELOOP, errno.EXDEV):
        raise UnsafePath(f"{rel} passes through a symlink or leaves its root",
                         "links inside a repository are never followed by codeloop")
    raise OSError(err, os.strerror(err), rel)


def normalise(rel: str | os.PathLike[str], root: Path | None = None) -> str:
    """`rel` as a clean relative POSIX path; refuses `..`, NUL and absolute paths not under
    `root`."""
    text = os.fspath(rel)
    if "\x00" in text:
        raise UnsafePath(f"path {text!r} contains a NUL byte")
    if text and text[0] != "/" and os.sep == "/" and all(
            p not in ("", ".", "..") for p in text.split("/")):
        return text  # already clean (the common case: the index reads thousands of these)
    if os.path.isabs(text):
        if root is None:
            raise UnsafePath(f"{text} is an absolute path", "give a path relative to the root")
        try:
            text = os.path.relpath(text, root)
        except ValueError as exc:
            raise UnsafePath(f"{text} is not under {root}") from exc
    parts = [p for p in PurePosixPath(text.replace(os.sep, "/")).parts if p not in ("", ".")]
    if ".." in parts:
        raise UnsafePath(f"path {text!r} leaves its root", "paths may not contain '..'")
    return "/".join(parts)


@dataclass(frozen=True)
class Entry:
    """One directory entry as seen without following it."""

    name: str
    rel: str
    st: os.stat_result

    @property
    def is_file(self) -> bool:
        return stat.S_ISREG(self.st.st_mode)

    @property
    def is_dir(self) -> bool:
        return stat.S_ISDIR(self.st.st_mode)

    @property
    def is_symlink(self) -> bool:
        return stat.S_ISLNK(self.st.st_mode)


class SafeRoot:
    """A directory the host reads and writes beneath without following any link."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)

    def __repr__(self) -> str:
        return f"SafeRoot({str(self.root)!r})"

    # -- opening ------------------------------------------------------------------------

    @contextmanager
    def _root_fd(self) -> Iterator[int]:
        fd = os.open(self.root, fsops.DIR_FLAGS & ~os.O_NOFOLLOW)
        try:
            yield fd
        finally:
            os.close(fd)

    def _open(self, rel: str, flags: int) -> int:
        """An fd for `rel` (already normalised, non-empty) opened with `flags`."""
        with self._root_fd() as rfd:
            fd = _openat2(rfd, rel, flags)
            if fd is not None:
                return fd
            with fsops.parent_fd(rfd, rel) as (pfd, name):
                try:
                    return os.open(name, flags | os.O_NOFOLLOW, dir_fd=pfd)
                except OSError as exc:
                    if exc.errno == errno.ELOOP:
                        raise UnsafePath(f"{rel} is a symlink",
                                         "links inside a repository are never followed") from exc
                    raise

    @contextmanager
    def open_dir(self, rel: str | os.PathLike[str] = "") -> Iterator[int]:
        """An fd of the directory `rel`, reached without links; closed on exit."""
        clean = normalise(rel, self.root)
        fd = self._open(clean, fsops.DIR_FLAGS) if clean else os.open(
            self.root, fsops.DIR_FLAGS & ~os.O_NOFOLLOW)
        try:
            yield fd
        finally:
            os.close(fd)

    # -- reading ------------------------------------------------------------------------

    def lstat(self, rel: str | os.PathLike[str]) -> os.stat_result | None:
        """The entry's own stat (a link is reported as a link), or None when absent or
        reachable only through a link."""
        clean = normalise(rel, self.root)
        if not clean:
            return os.stat(self.root)
        parent, _, name = clean.rpartition("/")
        try:
            with self.open_dir(parent) as pfd:
                return os.stat(name, dir_fd=pfd, follow_symlinks=False)
        except (FileNotFoundError, NotADirectoryError, UnsafePath):
            return None

    def is_file(self, rel: str | os.PathLike[str]) -> bool:
        st = self.lstat(rel)
        return st is not None and stat.S_ISREG(st.st_mode)

    def is_dir(self, rel: str | os.PathLike[str]) -> bool:
        st = self.lstat(rel)
        return st is not None and stat.S_ISDIR(st.st_mode)

    def is_symlink(self, rel: str | os.PathLike[str]) -> bool:
        st = self.lstat(rel)
        return st is not None and stat.S_ISLNK(st.st_mode)

    def exists(self, rel: str | os.PathLike[str]) -> bool:
        return self.lstat(rel) is not None

    def read_bytes(self, rel: str | os.PathLike[str], limit: int | None = None) -> bytes:
        """The bytes of the regular file `rel` (at most `limit`); a link, FIFO or device on
        the way is UnsafePath, a missing file FileNotFoundError."""
        clean = normalise(rel, self.root)
        if not clean:
            raise UnsafePath(f"{self.root} is a directory")
        fd = self._open(clean, _READ_FLAGS)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise UnsafePath(f"{clean} is not a regular file")
            chunks: list[bytes] = []
            left = limit if limit is not None else -1
            while left != 0:
                chunk = os.read(fd, 1 << 20 if left < 0 else min(left, 1 << 20))
                if not chunk:
                    break
                chunks.append(chunk)
                if left > 0:
                    left -= len(chunk)
            return b"".join(chunks)
        finally:
            os.close(fd)

    def read_text(self, rel: str | os.PathLike[str], limit: int | None = None) -> str:
        return self.read_bytes(rel, limit).decode("utf-8", "replace")

    def read_if_file(self, rel: str | os.PathLike[str],
                     limit: int | None = None) -> bytes | None:
        """The file's bytes, or None when it is absent, a link, or not a regular file."""
        try:
            return self.read_bytes(rel, limit)
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError, UnsafePath):
            return None

    def scandir(self, rel: str | os.PathLike[str] = "") -> list[Entry]:
        """The entries of directory `rel`, sorted by name, each lstat'ed (never followed)."""
        clean = normalise(rel, self.root)
        prefix = clean + "/" if clean else ""
        out: list[Entry] = []
        with self.open_dir(clean) as dfd:
            for name in sorted(os.listdir(dfd)):
                try:
                    st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
                except FileNotFoundError:
                    continue
                out.append(Entry(name, prefix + name, st))
        return out

    def walk(self, rel: str | os.PathLike[str] = "",
             skip_dir: Callable[[Entry], bool] | None = None) -> Iterator[Entry]:
        """Every non-directory entry below `rel` (links reported, never descended), in a
        stable order; directories for which `skip_dir` is true are not entered."""
        with self.open_dir(rel) as dfd:
            yield from self._walk_fd(dfd, normalise(rel, self.root), skip_dir)

    def _walk_fd(self, dfd: int, rel: str, skip_dir: Callable[[Entry], bool] | None
                 ) -> Iterator[Entry]:
        prefix = rel + "/" if rel else ""
        for name in sorted(os.listdir(dfd)):
            try:
                st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
            except FileNotFoundError:
                continue
            entry = Entry(name, prefix + name, st)
            if not entry.is_dir:
                yield entry
                continue
            if skip_dir is not None and skip_dir(entry):
                continue
            try:
                sub = os.open(name, fsops.DIR_FLAGS, dir_fd=dfd)
            except OSError:
                continue  # swapped for a link or removed since the stat: not entered
            try:
                yield from self._walk_fd(sub, entry.rel, skip_dir)
            finally:
                os.close(sub)

    # -- writing ------------------------------------------------------------------------

    def write_bytes(self, rel: str | os.PathLike[str], data: bytes, mode: int | None = None,
                    make_parents: bool = True) -> None:
        """Atomically replace `rel` with `data`; a link or hard link there is replaced, never
        written through. `mode` defaults to the old file's mode, else 0644."""
        clean = normalise(rel, self.root)
        with self._root_fd() as rfd, fsops.parent_fd(rfd, clean, create=make_parents) as (
                pfd, name):
            if mode is None:
                try:
                    old = os.stat(name, dir_fd=pfd, follow_symlinks=False)
                    mode = stat.S_IMODE(old.st_mode) if stat.S_ISREG(old.st_mode) else 0o644
                except FileNotFoundError:
                    mode = 0o644
            fsops.write_file_at(pfd, name, data, mode)

    def write_text(self, rel: str | os.PathLike[str], text: str, mode: int | None = None) -> None:
        self.write_bytes(rel, text.encode("utf-8"), mode)

    def remove(self, rel: str | os.PathLike[str]) -> bool:
        """Remove `rel` (a link itself, never its target; a directory with its contents);
        False if absent."""
        clean = normalise(rel, self.root)
        if not clean:
            raise UnsafePath("refusing to remove the root itself")
        with self._root_fd() as rfd:
            try:
                with fsops.parent_fd(rfd, clean) as (pfd, name):
                    return fsops.remove_at(pfd, name)
            except FileNotFoundError:
                return False

    def mkdir(self, rel: str | os.PathLike[str]) -> None:
        """Make directory `rel` and its parents; a link on the way is UnsafePath."""
        clean = normalise(rel, self.root)
        with self._root_fd() as rfd:
            os.close(fsops.open_dir(rfd, fsops.split(clean), create=True))
