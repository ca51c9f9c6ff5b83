"""The session's code index, opened on a thread so the first model call does not wait for it.

A cold repository takes seconds to minutes to index (sympy: 15–170 s by load); a warm one
still a second to load and sweep. The index is handed out as soon as it is open: while it
builds, the search tools answer from the batches committed so far and say the index is
partial (`RepoIndex.progress`); before it opens they wait a little and otherwise say it is
not ready (`IndexBuilding`). A cold start builds the view's index and, once the first task
context has been built (and with it the file graph and the commit search saved in the
store), gives the repository a copy, so that the next session's view starts from it
(`index.registry.share_with_seed`).
"""

from __future__ import annotations

import atexit
import contextlib
import sqlite3
import threading
import time
import weakref
from collections.abc import Callable
from pathlib import Path

from codeloop.errors import CodeloopError
from codeloop.index import store
from codeloop.index.registry import open_index, share_with_seed
from codeloop.index.service import RepoIndex

# Opens the index of `view` (a workspace's tree) seeded from `repo`, in the cache directory
# given: what tests slow down. The index may come back unswept: the warmup sweeps it.
IndexOpener = Callable[[Path, Path, Path], RepoIndex]
WARMUP_SERVICE = "index_warmup"
_live: weakref.WeakSet[IndexWarmup] = weakref.WeakSet()


class IndexBuilding(CodeloopError):
    """A search tool was called while the session's index is still being built."""


class IndexUnavailable(CodeloopError):
    """The session's index could not be built; the text tools still work."""


def open_session_index(view: Path, repo: Path, cache: Path) -> RepoIndex:
    """The view's index, open but not yet swept (a copy of the repository's when it has
    one; empty when cold)."""
    return open_index(view, cache, seed=repo if view.resolve() != repo.resolve() else None,
                      sweep=False)


class IndexWarmup:
    """Builds the index on a daemon thread; `then` runs on that thread once it is open (the
    context feed builds the first task context there, calls `ready`, then loads what later
    contexts reuse)."""

    def __init__(self, view: Path, repo: Path, opener: IndexOpener | None = None,
                 then: Callable[[RepoIndex], None] | None = None) -> None:
        self.view, self.repo = view, repo
        # Fixed now: the thread must not follow a setting changed after the session began.
        self.cache = store.cache_root()
        self.opener = opener or open_session_index
        self.then = then
        self.started = time.monotonic()
        self.ready_after_s: float | None = None
        self.index: RepoIndex | None = None
        self.error: str | None = None
        self._opened = threading.Event()
        self._ready = threading.Event()
        self._done = threading.Event()
        self._lock = threading.Lock()
        self._after: Callable[[], None] | None = None
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name="codeloop-index-warmup")

    def start(self) -> IndexWarmup:
        _live.add(self)
        self._thread.start()
        return self

    def _run(self) -> None:
        try:
            index = self.opener(self.view, self.repo, self.cache)
            self.index = index
            self._opened.set()  # searchable from here on: partial until the sweep ends
            if not index.swept:
                index.update()
            self.ready_after_s = time.monotonic() - self.started
        except (CodeloopError, OSError, sqlite3.Error) as exc:
            self.index = None
            self.error = f"{type(exc).__name__}: {exc}"
        finally:
            self._opened.set()
        try:
            if self.index is not None and self.then is not None:
                self.then(self.index)
        finally:
            # After `then`: the first context saved the file graph and the commit search in
            # the store, so the repository's copy has them and a warm start loads them.
            if self.index is not None:
                with contextlib.suppress(CodeloopError, OSError, sqlite3.Error):
                    share_with_seed(self.index, self.cache)
            with self._lock:
                self._ready.set()
                self._done.set()
                after, self._after = self._after, None
            if after is not None:
                after()

    def wait(self, timeout: float = 0.0) -> RepoIndex | None:
        """The index once open (waiting at most `timeout` seconds), else None."""
        self._opened.wait(timeout)
        return self.index

    def wait_done(self, timeout: float = 0.0) -> bool:
        """Whether the index is open and `then` has run (waiting at most `timeout`)."""
        return self._done.wait(timeout)

    def ready(self) -> None:
        """Called by `then` once it has made what the first model call waits for."""
        self._ready.set()

    def wait_ready(self, timeout: float = 0.0) -> bool:
        """Whether `then` said it is `ready` or the thread is done (waiting at most
        `timeout`)."""
        return self._ready.wait(timeout)

    def for_tool(self, timeout: float) -> RepoIndex:
        """The index for a search tool: waits up to `timeout`, then says why there is none."""
        index = self.wait(timeout)
        if index is not None:
            return index
        if self.error is not None:
            raise IndexUnavailable(f"the code index could not be built ({self.error})",
                                   "use grep, list_files and read_file")
        elapsed = time.monotonic() - self.started
        raise IndexBuilding(
            f"the code index is still being built ({elapsed:.0f} s so far), so there is no "
            "result yet",
            "use grep, list_files and read_file meanwhile; search again in a little while")

    def close(self) -> None:
        """Wait for the thread: the view's index must not be deleted while it is built."""
        self._thread.join()

    def release(self, cleanup: Callable[[], None], wait_s: float) -> None:
        """Run `cleanup` (deleting the view's index) once the thread is done: now if it is
        within `wait_s`, else on the thread when it finishes, so a session that ends
        early does not wait for a cold index (in a process that exits, it never runs)."""
        self._done.wait(wait_s)
        with self._lock:
            if not self._done.is_set():
                self._after = cleanup
                return
        cleanup()


# How long a process that is exiting waits for an index thread still at work.
EXIT_WAIT_S = 30.0


@atexit.register
def _finish_before_exit() -> None:
    """Index threads still in native code (tree-sitter, the token encoder) when the
    interpreter tears down can abort the process; an exiting process lets them finish."""
    deadline = time.monotonic() + EXIT_WAIT_S
    for warmup in list(_live):
        warmup._thread.join(max(0.0, deadline - time.monotonic()))


def wait_for_warmups() -> None:
    """Wait for every index thread this process started (tests, before their tmp dirs go)."""
    for warmup in list(_live):
        warmup.close()
