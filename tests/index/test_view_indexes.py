"""Indexes made for a workspace's view are deleted when done with, and never pile up."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from codeloop.cli import main
from codeloop.index import store
from codeloop.index.registry import discard_index, open_index, prune_indexes
from codeloop.index.service import RepoIndex
from codeloop.workspace.factory import open_workspace


def _view(repo: Path, state: Path) -> Path:
    """A real overlay workspace of `repo`; returns its merged view."""
    return open_workspace(repo, state).path


def _names(cache: Path) -> set[str]:
    return {p.name for p in store.index_dirs(cache)}


def _open_in_a_process_that_dies(view: Path, seed: Path) -> None:
    """Open the view's index in another process that exits without cleaning up."""
    code = ("import os, sys; from pathlib import Path; "
            "from codeloop.index.registry import open_index; "
            "open_index(Path(sys.argv[1]), seed=Path(sys.argv[2])); os._exit(9)")
    src = str(Path(__file__).resolve().parents[2] / "src")
    proc = subprocess.run([sys.executable, "-c", code, str(view), str(seed)],
                          env={**os.environ, "PYTHONPATH": src}, capture_output=True, text=True)
    assert proc.returncode == 9, proc.stderr


def _seeded(repo: Path) -> None:
    index = RepoIndex(repo)
    index.update()
    index.close()


def test_a_view_index_is_seeded_recorded_and_discarded(repo: Path, tmp_path: Path,
                                                       index_cache_dir: Path) -> None:
    _seeded(repo)
    view = _view(repo, tmp_path / "ws")
    index = open_index(view, seed=repo)
    assert index.search("apply discount")[0].path == "shop/pricing.py"
    origin = store.read_origin(index.dir)
    assert origin == store.Origin(str(view.resolve()), str(repo.resolve()))
    assert store.read_origin(store.index_dir(repo)) == store.Origin(str(repo.resolve()))

    assert discard_index(view)
    assert not store.index_dir(view).exists()
    assert _names(index_cache_dir) == {store.index_dir(repo).name}
    # Nothing stale stays cached in the process: opening the view again works afresh.
    again = open_index(view, seed=repo)
    assert again is not index
    assert again.find_symbol("ShoppingCart")[0].path == "shop/cart.py"
    assert not discard_index(tmp_path / "never-indexed")


def test_opening_a_view_deletes_views_whose_tree_is_gone(repo: Path, tmp_path: Path,
                                                         index_cache_dir: Path) -> None:
    _seeded(repo)
    crashed = _view(repo, tmp_path / "crashed")
    _open_in_a_process_that_dies(crashed, repo)
    left_behind = store.index_dir(crashed)
    assert store.read_origin(left_behind) == store.Origin(str(crashed), str(repo.resolve()))
    shutil.rmtree(tmp_path / "crashed")  # as an eval's temp dir or a deleted session goes
    live = _view(repo, tmp_path / "live")
    open_index(live, seed=repo)
    other = tmp_path / "other"
    shutil.copytree(repo, other)
    _seeded(other)
    shutil.rmtree(other)
    unrecorded = index_cache_dir / "index" / "merged-000000000000"
    unrecorded.mkdir()

    open_index(_view(repo, tmp_path / "next"), seed=repo)
    names = _names(index_cache_dir)
    assert left_behind.name not in names
    # A repository's own index and an index whose origin is unknown are not views: kept.
    assert {store.index_dir(live).name, store.index_dir(repo).name,
            store.index_dir(other).name, unrecorded.name} <= names


def test_prune_deletes_what_is_gone_and_never_an_open_index(repo: Path, tmp_path: Path,
                                                            index_cache_dir: Path) -> None:
    gone_repo = tmp_path / "checkout"
    shutil.copytree(repo, gone_repo)
    _seeded(gone_repo)
    shutil.rmtree(gone_repo)
    view = _view(repo, tmp_path / "ws")
    open_index(view, seed=repo)
    shutil.rmtree(tmp_path / "ws")  # its tree is gone, but this process still has it open
    unrecorded = index_cache_dir / "index" / "merged-000000000000"
    unrecorded.mkdir()

    assert prune_indexes(views_only=True) == []
    assert prune_indexes(dry_run=True) == [store.index_dir(gone_repo)]
    assert store.index_dir(gone_repo).exists()
    assert prune_indexes() == [store.index_dir(gone_repo)]
    assert prune_indexes(unrecorded=True) == [unrecorded]
    assert store.index_dir(view).is_dir()


def test_index_gc_command_reports_what_it_deleted(repo: Path, tmp_path: Path,
                                                  index_cache_dir: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    gone_repo = tmp_path / "checkout"
    shutil.copytree(repo, gone_repo)
    _seeded(gone_repo)
    _seeded(repo)
    shutil.rmtree(gone_repo)
    assert main(["index-gc", "--dry-run", "--json"]) == 0
    report = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert report["removed"] == [str(store.index_dir(gone_repo))] and report["dry_run"]
    assert report["freed_bytes"] > 0
    assert store.index_dir(gone_repo).exists()
    assert main(["index-gc"]) == 0
    assert "deleted 1 index(es)" in capsys.readouterr().out
    assert _names(index_cache_dir) == {store.index_dir(repo).name}


def _files_under(directory: Path) -> dict[str, Path]:
    return {str(p.relative_to(directory)): p for p in directory.rglob("*") if p.is_file()}


def test_a_view_index_links_its_seeds_bm25_and_never_writes_through_the_links(
        repo: Path, tmp_path: Path, index_cache_dir: Path) -> None:
    _seeded(repo)
    seed_dir = store.index_dir(repo)
    index = open_index(_view(repo, tmp_path / "ws"), seed=repo)
    shared = {name: path for part in ("chunks", "files")
              for name, path in _files_under(seed_dir / part).items()
              for name in [f"{part}/{name}"]}
    assert any(name.endswith("vocab.terms.npy") for name in shared)
    for name, path in shared.items():  # the same file, not a copy
        assert (index.dir / name).stat().st_ino == path.stat().st_ino, name
    assert (index.dir / "index.sqlite").stat().st_ino != (seed_dir / "index.sqlite").stat().st_ino
    before = {name: (path.stat().st_ino, path.read_bytes()) for name, path in shared.items()}

    # The view's index saves its BM25 indexes again (as after a checkout to another commit)
    # with a file the repository does not have: the seed's files stay as they were.
    (index.root / "shop" / "refunds.py").write_text("def refund_order(order):\n    return 0\n")
    index.notify_changed(["shop/refunds.py"])
    index._terms.rebuild()
    assert index.search("refund order")[0].path == "shop/refunds.py"
    for name, path in shared.items():
        assert (path.stat().st_ino, path.read_bytes()) == before[name], name
        assert (index.dir / name).stat().st_ino != path.stat().st_ino, name
    seed = RepoIndex(repo)
    assert seed.search("refund order") == []
    assert seed.search("apply discount")[0].path == "shop/pricing.py"
    seed.close()


def _as_saved_before(part: Path) -> None:
    """Turn a saved BM25 index into the layout before this one: frequencies and lengths by
    key in its JSON, no sorted vocabulary."""
    for name in ("vocab.terms.npy", "vocab.offsets.npy", "vocab.columns.npy", "vocab.heads.npy"):
        (part / "bm25" / name).unlink()
    meta = json.loads((part / "lexical.json").read_text())
    lens = dict(zip(meta["keys"], meta.pop("lengths"), strict=True))
    (part / "lexical.json").write_text(json.dumps({**meta, "lens": lens, "df": {"x": 1}}))


def test_a_seed_saved_in_the_earlier_layout_is_saved_again_when_a_view_copies_it(
        repo: Path, tmp_path: Path, index_cache_dir: Path) -> None:
    _seeded(repo)
    seed_dir = store.index_dir(repo)
    for part in ("chunks", "files"):
        _as_saved_before(seed_dir / part)
    index = open_index(_view(repo, tmp_path / "ws"), seed=repo)
    for part in ("chunks", "files"):
        assert (seed_dir / part / "bm25" / "vocab.terms.npy").is_file()
        assert "df" not in json.loads((seed_dir / part / "lexical.json").read_text())
    chunks, _files = index._terms.searchable()
    assert chunks._base is not None and type(chunks._base.vocab_dict) is not dict
    assert index.search("apply discount")[0].path == "shop/pricing.py"
    seed = RepoIndex(repo)
    assert seed.search("apply discount")[0].path == "shop/pricing.py"
    seed.close()
