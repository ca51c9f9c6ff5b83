"""The search tools answer from the batches an index build has committed, and say so."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from codeloop.index import store, term_indexes
from codeloop.index.registry import open_index
from codeloop.index.service import RepoIndex
from codeloop.index.sweep import BATCH_FILES
from codeloop.index.warmup import WARMUP_SERVICE, IndexWarmup, open_session_index
from codeloop.sandbox.base import CommandResult, Limits
from codeloop.tools.base import ToolContext
from codeloop.tools.search_tools import FindSymbol, SearchCode
from codeloop.workspace.copy import CopyWorkspace

FILES = BATCH_FILES * 2 + 50


class _NoSandbox:
    name = "none"

    def run(self, command: str, cwd: Path, env: dict[str, str] | None = None,
            limits: Limits | None = None) -> CommandResult:
        raise AssertionError("search tools must not run commands")


def big_repo(tmp_path: Path) -> Path:
    """Enough modules for three batches; every one mentions `ledger` and defines its own
    `settle_<n>`."""
    root = tmp_path / "repo"
    (root / "books").mkdir(parents=True)
    for n in range(FILES):
        (root / "books" / f"mod{n:03}.py").write_text(
            f'"""Ledger entries, part {n}."""\n\n\n'
            f"def settle_{n}(ledger):\n    return sum(ledger) + {n}\n")
    return root


class HeldBuild:
    """Opens the view's index unswept and holds its build after the first batch."""

    def __init__(self) -> None:
        self.first_batch = threading.Event()
        self.release = threading.Event()
        self.index: RepoIndex | None = None

    def open(self, view: Path, repo: Path, cache: Path) -> RepoIndex:
        index = open_session_index(view, repo, cache)
        index.sweeps.after_batch = self.after_batch
        self.index = index
        return index

    def after_batch(self, number: int) -> None:
        if number == 1:
            self.first_batch.set()
            assert self.release.wait(60)


def test_search_during_a_build_answers_from_the_first_batch_and_says_it_is_partial(
        tmp_path: Path) -> None:
    repo = big_repo(tmp_path)
    ctx = ToolContext(workspace=CopyWorkspace(repo, tmp_path / "ws"), sandbox=_NoSandbox())
    held = HeldBuild()
    warmup = IndexWarmup(ctx.workspace.path, repo, held.open)
    ctx.services[WARMUP_SERVICE] = warmup
    warmup.start()
    try:
        assert held.first_batch.wait(60)
        assert held.index is not None
        indexed = set(held.index.paths())
        assert len(indexed) == BATCH_FILES  # the first batch, committed; nothing more

        obs = SearchCode().run(SearchCode.args_model(query="ledger entries", limit=30), ctx)
        paths = {f["path"] for f in obs.data["files"]}
        assert paths and paths <= indexed
        assert obs.output.startswith(
            f"[partial index: {BATCH_FILES} of {FILES} files indexed so far")
        assert obs.data["partial"] == {"indexed": BATCH_FILES, "total": FILES}

        first = next(iter(sorted(indexed)))
        n_first = int(first.removeprefix("books/mod").removesuffix(".py"))
        later = next(n for n in range(FILES) if f"books/mod{n:03}.py" not in indexed)
        found = FindSymbol().run(FindSymbol.args_model(name=f"settle_{n_first}"), ctx)
        assert f"{first}:4-5 function settle_{n_first}" in found.output
        assert found.data["partial"]["indexed"] == BATCH_FILES
        missing = FindSymbol().run(FindSymbol.args_model(name=f"settle_{later}"), ctx)
        assert "[partial index:" in missing.output and "missing here" in missing.output
        assert not missing.data["definitions"]
    finally:
        held.release.set()
    assert warmup.wait_done(120)
    assert warmup.error is None

    obs = SearchCode().run(SearchCode.args_model(query="ledger entries", limit=30), ctx)
    assert "partial" not in obs.data and not obs.output.startswith("[partial")
    later_file = f"books/mod{later:03}.py"
    found = FindSymbol().run(FindSymbol.args_model(name=f"settle_{later}"), ctx)
    assert f"{later_file}:4-5 function settle_{later}" in found.output
    assert len(held.index.paths()) == FILES
    warmup.close()


def test_a_cold_build_gives_the_repository_a_copy_of_the_views_index(tmp_path: Path) -> None:
    repo = big_repo(tmp_path)
    view = CopyWorkspace(repo, tmp_path / "ws").path
    cache = store.cache_root()
    warmup = IndexWarmup(view, repo).start()
    assert warmup.wait_done(120) and warmup.error is None
    own = store.index_dir(repo, cache)
    origin = store.read_origin(own)
    assert origin is not None and origin.root == str(repo.resolve()) and not origin.is_view
    index = RepoIndex(repo, cache)
    stats = index.update()
    assert stats.touched == 0 and stats.scanned == FILES  # nothing left to parse
    assert [h.name for h in index.find_symbol("settle_7")] == ["settle_7"]
    index.close()
    warmup.close()


def test_a_warm_start_seeds_its_view_and_leaves_the_repositorys_index_alone(
        tmp_path: Path) -> None:
    repo = big_repo(tmp_path)
    cache = store.cache_root()
    cold = IndexWarmup(CopyWorkspace(repo, tmp_path / "ws1").path, repo).start()
    assert cold.wait_done(120) and cold.error is None
    cold.close()
    own = store.index_dir(repo, cache)
    before = [(p.name, p.stat().st_ino, p.stat().st_mtime_ns) for p in sorted(own.iterdir())]
    swept: list[int] = []

    def open_swept(view: Path, seed: Path, at: Path) -> RepoIndex:
        index = open_session_index(view, seed, at)
        swept.append(index.update().touched)
        return index

    warm = IndexWarmup(CopyWorkspace(repo, tmp_path / "ws2").path, repo, open_swept).start()
    assert warm.wait_done(120) and warm.error is None
    warm.close()
    assert swept == [0]  # the view started from the repository's index: nothing re-parsed
    # Nothing copied back over the repository's own index, nor left half-copied beside it.
    assert [(p.name, p.stat().st_ino, p.stat().st_mtime_ns)
            for p in sorted(own.iterdir())] == before
    assert not [p for p in own.parent.iterdir() if p.name.startswith(".")]


def test_readers_see_only_committed_batches(tmp_path: Path) -> None:
    repo = big_repo(tmp_path)
    index = open_index(repo, sweep=False)
    seen: list[int] = []

    def after_batch(number: int) -> None:
        # Between batches every table agrees: files, chunks and definitions of whole files.
        files = index.stats()["files"]
        seen.append(files)
        assert len({h.path for h in index.find_symbol("settle", limit=1000)}) == files

    index.sweeps.after_batch = after_batch
    assert index.progress() is None
    index.update()
    assert seen == [BATCH_FILES, 2 * BATCH_FILES, FILES]
    assert index.progress() is None


def test_a_search_during_a_build_sees_later_batches_too(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(term_indexes, "SNAPSHOT_EVERY_S", 0.0)
    repo = big_repo(tmp_path)
    index = open_index(repo, sweep=False)
    counts: list[int] = []

    def after_batch(number: int) -> None:
        counts.append(len({h.path for h in index.search("ledger", limit=1000)}))

    index.sweeps.after_batch = after_batch
    index.update()
    assert counts == [BATCH_FILES, 2 * BATCH_FILES, FILES]
    assert len({h.path for h in index.search("ledger", limit=1000)}) == FILES


def test_searches_during_a_build_reuse_a_recent_snapshot(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(term_indexes, "SNAPSHOT_EVERY_S", 3600.0)
    repo = big_repo(tmp_path)
    index = open_index(repo, sweep=False)
    counts: list[int] = []

    def after_batch(number: int) -> None:
        counts.append(len({h.path for h in index.search("ledger", limit=1000)}))

    index.sweeps.after_batch = after_batch
    index.update()
    # The first search takes a snapshot; the next ones within the hour reuse it.
    assert counts == [BATCH_FILES] * 3
    assert len({h.path for h in index.search("ledger", limit=1000)}) == FILES


def test_a_sweep_waits_while_another_thread_reads(tmp_path: Path) -> None:
    repo = big_repo(tmp_path)
    index = open_index(repo, sweep=False)
    with index.reading():
        sweep = threading.Thread(target=index.update)
        sweep.start()
        sweep.join(0.5)
        progress = index.progress()
        # Held at its first step: nothing committed while the read runs.
        assert sweep.is_alive() and progress is not None and progress.indexed == 0
    sweep.join(60)
    assert not sweep.is_alive() and index.progress() is None
    assert len(index.paths()) == FILES
