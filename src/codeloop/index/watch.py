"""Long-running freshness: a `watchfiles` watcher that re-indexes files as they change."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import watchfiles

from codeloop.index.service import RepoIndex
from codeloop.index.walker import SKIP_DIRS


def _relevant(root: Path, changes: set[tuple[watchfiles.Change, str]]) -> list[str]:
    out: set[str] = set()
    for _change, raw in changes:
        try:
            rel = Path(raw).resolve().relative_to(root).as_posix()
        except ValueError:
            continue
        if not any(part in SKIP_DIRS for part in rel.split("/")):
            out.add(rel)
    return sorted(out)


def watch_forever(index: RepoIndex, on_change: Callable[[list[str]], None] | None = None,
                  stop: threading.Event | None = None) -> None:
    """Block, re-indexing changed files, until `stop` is set (or Ctrl-C)."""
    for changes in watchfiles.watch(index.root, stop_event=stop, raise_interrupt=False):
        paths = _relevant(index.root, changes)
        if paths:
            # A .gitignore change can hide or reveal whole trees: sweep instead.
            if any(p.endswith(".gitignore") for p in paths):
                index.update()
            else:
                index.notify_changed(paths)
            if on_change is not None:
                on_change(paths)


class IndexWatcher:
    """`watch_forever` on a daemon thread, for servers and long sessions."""

    def __init__(self, index: RepoIndex) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=watch_forever, args=(index, None, self._stop),
                                        daemon=True, name="codeloop-index-watch")

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
