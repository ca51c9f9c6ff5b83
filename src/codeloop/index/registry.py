"""The indexes this process has open (one per tree), and deleting those no tree needs: a
session view's index when its run ends, and indexes whose tree is gone."""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import threading
from pathlib import Path

from codeloop.index import store
from codeloop.index.lexical import LexicalIndex
from codeloop.index.service import RepoIndex

_OPEN: dict[tuple[Path, Path | None], RepoIndex] = {}
_OPEN_LOCK = threading.Lock()


def open_index(root: Path, cache: Path | None = None, seed: Path | None = None,
               sweep: bool = True) -> RepoIndex:
    """The index for `root`, opened once per process and path (and brought up to date, unless
    `sweep` is False: then the caller sweeps it, and may search it meanwhile).

    `seed` is a tree `root` was copied from (a workspace's source repository): if `root` has
    no index yet and `seed` has one, it is copied first, so only the files that differ are
    parsed (copies keep modification times; paths in the index are relative). Opening a new
    view also deletes the indexes of views whose tree is gone (left by a crashed process)."""
    key = (root.resolve(), cache if cache is not None else store.cache_root())
    with _OPEN_LOCK:
        index = _OPEN.get(key)
        if index is None:
            target = store.index_dir(root, key[1])
            source = store.index_dir(seed, key[1]) if seed is not None else None
            if seed is not None and not target.exists():
                _prune_locked(key[1], views_only=True, unrecorded=False)
            if source is not None and source.is_dir() and not target.exists():
                copy_seed(source, target)
            index = RepoIndex(root, key[1], background_sweeps=True, seed=seed)
            _OPEN[key] = index
    if sweep and not index.swept:
        index.update()
    return index


# The saved BM25 indexes of an index directory: never written again once saved (a save
# replaces the whole directory, `LexicalIndex.save`), so a view's index shares its seed's.
SHARED_PARTS = ("chunks", "files")


def copy_seed(source: Path, target: Path) -> None:
    """Make `target` a copy of the index directory `source`: the store copied (the view's
    index writes to it), the saved BM25 indexes hard-linked (about a third of the bytes on
    sympy: ~20 ms of a warm start's copy), or copied where links cannot be made."""
    shutil.copytree(source, target, ignore=shutil.ignore_patterns(*SHARED_PARTS))
    for part in SHARED_PARTS:
        if (source / part).is_dir():
            with contextlib.suppress(OSError):  # a read-only cache: the view reads it as is
                LexicalIndex.upgrade_saved(source / part)
            try:
                shutil.copytree(source / part, target / part, copy_function=os.link)
            except OSError:  # a file system without hard links
                shutil.rmtree(target / part, ignore_errors=True)
                shutil.copytree(source / part, target / part)


def share_with_seed(index: RepoIndex, cache: Path | None = None) -> bool:
    """Give a view's repository a copy of the view's index when it has none of its own (a
    cold start builds the view's index only), so later views start from it; True if copied.

    Files the session edited meanwhile differ from the repository's in modification time,
    so the repository's first sweep re-reads them."""
    if index.seed is None:
        return False
    cache = cache if cache is not None else store.cache_root()
    target = store.index_dir(index.seed, cache)
    if target.exists():
        return False
    temp = target.with_name(f".{target.name}.{os.getpid()}.{threading.get_ident()}")
    try:
        index.copy_to(temp)
        store.write_origin(temp, store.Origin(str(index.seed.resolve())))
        temp.rename(target)
    except (OSError, sqlite3.Error):
        return False  # another process made it first, or the cache is not writable
    finally:
        shutil.rmtree(temp, ignore_errors=True)
    return True


def discard_index(root: Path, cache: Path | None = None) -> bool:
    """Close `root`'s index if this process has it open and delete its directory; True if
    there was one. For a workspace's view once its session is done with it."""
    key = (root.resolve(), cache if cache is not None else store.cache_root())
    with _OPEN_LOCK:
        index = _OPEN.pop(key, None)
        if index is not None:
            with contextlib.suppress(sqlite3.Error):
                index.close(save=False)  # about to be deleted
        target = store.index_dir(root, key[1])
        if not target.is_dir():
            return False
        shutil.rmtree(target, ignore_errors=True)
        return True


def prune_indexes(cache: Path | None = None, *, views_only: bool = False,
                  unrecorded: bool = False, dry_run: bool = False) -> list[Path]:
    """Delete the index directories whose tree no longer exists; returns them.

    `views_only` keeps repositories' own indexes (a repository on an unmounted disk comes
    back); `unrecorded` also deletes directories that do not say what they index (made
    before origins were recorded: only safe when no older codeloop process is running).
    An index this process has open is never deleted."""
    with _OPEN_LOCK:
        return _prune_locked(cache if cache is not None else store.cache_root(),
                             views_only=views_only, unrecorded=unrecorded, dry_run=dry_run)


def _prune_locked(cache: Path, *, views_only: bool, unrecorded: bool,
                  dry_run: bool = False) -> list[Path]:
    in_use = {index.dir.name for (_root, c), index in _OPEN.items() if c == cache}
    removed: list[Path] = []
    for directory in store.index_dirs(cache):
        if directory.name in in_use:
            continue
        origin = store.read_origin(directory)
        if origin is None:
            gone = unrecorded
        else:
            gone = (origin.is_view or not views_only) and not Path(origin.root).is_dir()
        if gone:
            if not dry_run:
                shutil.rmtree(directory, ignore_errors=True)
            removed.append(directory)
    return removed


def forget_open_indexes() -> None:
    """Close every cached index (tests, and processes that change CODELOOP_CACHE_DIR)."""
    with _OPEN_LOCK:
        for index in _OPEN.values():
            with contextlib.suppress(sqlite3.Error):
                index.close()
        _OPEN.clear()
