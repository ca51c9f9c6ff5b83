"""The file graph and the commit search are saved in the index's store: a warm open loads
them instead of building them, an edited file's edges are redone in the saved graph, and a
stale, corrupt or crafted saved blob is built again, never served."""

from __future__ import annotations

import json
import sqlite3
import zlib
from pathlib import Path

import numpy as np
import pytest
from tests.index.conftest import git
from tests.index.test_derived_after_edits import edges, walk_matrix

from codeloop.index import derived, graph_store, saved
from codeloop.index.graph import build_graph
from codeloop.index.registry import open_index, share_with_seed
from codeloop.index.service import RepoIndex
from codeloop.index.term_indexes import TermIndexes

TITLE = "Fix rounding in apply_discount"


def commit_fix(repo: Path) -> None:
    """A commit whose message is `TITLE`, changing the file it is about."""
    pricing = repo / "shop" / "pricing.py"
    pricing.write_text(pricing.read_text() + "# rounded\n")
    git(repo, "commit", "-qam", TITLE)


def opened(root: Path, cache: Path) -> RepoIndex:
    index = RepoIndex(root, cache)
    index.update()
    return index


def reopened_origin(root: Path, cache: Path) -> str:
    """Where the next open's graph came from (`stored`: nothing left to redo)."""
    index = opened(root, cache)
    index.graph()
    origin = index.graph_origin
    index.close()
    return origin


def assert_opens_as_built(root: Path, cache: Path, origin: str) -> None:
    """The next open serves the graph a build gives, got the way `origin` says."""
    index = opened(root, cache)
    assert_as_built(index)
    assert index.graph_origin == origin
    index.close()


def assert_as_built(index: RepoIndex) -> None:
    """The graph in use is the one a build from the store's rows gives."""
    graph, fresh = index.graph(), build_graph(index.db)
    assert graph.paths == fresh.paths
    assert edges(graph) == edges(fresh)
    assert walk_matrix(graph) == walk_matrix(fresh)
    assert list(graph.out_weight) == list(fresh.out_weight)
    assert graph.shapes == fresh.shapes
    for name, i in fresh.names.items():
        assert sorted(graph.edges_named([graph.names[name]]).tolist()) == sorted(
            int(e) for e in np.flatnonzero(graph.edge_name == graph.names[name]))
        assert len(graph.edges_named([graph.names[name]])) == len(fresh.edges_named([i]))


def saved_blob(index: RepoIndex, name: str) -> bytes:
    row = index.db.execute("SELECT data FROM saved WHERE name=?", (name,)).fetchone()
    assert row is not None, f"nothing saved under {name}"
    return bytes(row[0])


def test_a_warm_open_loads_the_graph_and_commit_search_instead_of_building_them(
        repo: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    commit_fix(repo)
    first = opened(repo, cache)
    first.graph()
    votes = first.commit_search().files_for(TITLE)
    assert "shop/pricing.py" in votes
    assert (first.graph_origin, first.history_origin) == ("built", "built")
    first.close()

    warm = opened(repo, cache)
    assert_as_built(warm)
    assert warm.graph_origin == "stored"
    assert warm.commit_search().files_for(TITLE) == votes
    assert warm.history_origin == "stored"
    # HEAD moves: the saved search is for another commit, so it is built again.
    (repo / "shop" / "pricing.py").write_text("def apply_discount(amount):\n    return amount\n")
    git(repo, "commit", "-qam", "Round discounts to cents")
    warm.commit_search()
    assert warm.history_origin == "built"
    warm.close()


def test_an_edit_while_open_is_in_the_graph_the_next_open_loads(repo: Path,
                                                                tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    index = opened(repo, cache)
    index.graph()
    # Same names defined; the cart now also uses VAT_RATE from pricing.
    cart = repo / "shop" / "cart.py"
    cart.write_text(cart.read_text().replace("import apply_discount",
                                             "import VAT_RATE, apply_discount"))
    index.notify_changed(["shop/cart.py"])
    index.graph()
    index.close()

    warm = opened(repo, cache)
    assert_as_built(warm)
    assert warm.graph_origin == "stored"
    assert ("shop/cart.py", "shop/pricing.py") in {(s, d) for s, d, _, _ in edges(warm.graph())}
    warm.close()


def test_a_name_defined_while_open_is_in_the_graph_the_next_open_loads(
        repo: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    index = opened(repo, cache)
    before = index.graph()
    # pricing.py now also defines `add_item`, which the cart calls on itself.
    pricing = repo / "shop" / "pricing.py"
    pricing.write_text(pricing.read_text() + "\n\ndef add_item(item):\n    return item\n")
    index.notify_changed(["shop/pricing.py"])
    assert_as_built(index)
    assert index.graph().paths is before.paths  # updated, not built again
    index.close()
    assert_opens_as_built(repo, cache, "stored")


def test_a_file_changed_while_closed_has_its_edges_redone_not_the_whole_graph(
        repo: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    opened(repo, cache).graph()
    RepoIndex(repo, cache).close()
    cart = repo / "shop" / "cart.py"  # the same names defined, another one used
    cart.write_text(cart.read_text().replace("sum(", "VAT_RATE + sum("))
    assert_opens_as_built(repo, cache, "stored+updated")
    # Saved again once brought up to date: the next open has nothing to redo.
    assert reopened_origin(repo, cache) == "stored"


def test_files_added_removed_or_reshaped_while_closed_are_brought_into_the_saved_graph(
        repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """As after a `git pull` between two sessions: the saved graph is brought up to date
    (a build would cost a large repository's first context most of a second)."""
    cache = tmp_path / "cache"
    pricing = repo / "shop" / "pricing.py"
    pricing.write_text(pricing.read_text() + "\n\ndef round_price(x):\n    return x\n")
    (repo / "shop" / "tax.py").write_text("def taxed(x):\n    return round_price(x)\n")
    (repo / "shop" / "basket.py").write_text("def fill(cart, item):\n    cart.add_item(item)\n")
    assert ("shop/tax.py", "shop/pricing.py", 1.0, "round_price") in edges(
        opened(repo, cache).graph())
    # pricing.py stops defining round_price and now defines add_item, which the cart
    # calls on itself; a new module defines a second apply_discount; the package file goes.
    (repo / "shop" / "pricing.py").write_text(
        "def apply_discount(amount, percent=0):\n    return amount\n\n\n"
        "def add_item(item):\n    return item\n")
    (repo / "shop" / "sale.py").write_text(
        "from shop.pricing import add_item\n\n\ndef apply_discount(amount):\n"
        "    return add_item(amount)\n")
    (repo / "shop" / "__init__.py").unlink()

    def no_build(*_args: object) -> None:
        raise AssertionError("the graph was built again")
    monkeypatch.setattr(derived, "build_graph", no_build)
    index = opened(repo, cache)
    graph = index.graph()
    monkeypatch.undo()
    assert index.graph_origin == "stored+updated"
    assert "shop/sale.py" in graph.index and "shop/__init__.py" not in graph.index
    assert_as_built(index)
    assert not any(n == "round_price" for _, _, _, n in edges(graph))
    assert ("shop/basket.py", "shop/pricing.py", 0.5, "add_item") in edges(graph)
    assert {(s, d, w, n) for s, d, w, n in edges(graph) if n == "apply_discount"} == {
        ("shop/cart.py", "shop/pricing.py", 0.5, "apply_discount"),
        ("shop/cart.py", "shop/sale.py", 0.5, "apply_discount")}
    index.close()
    assert reopened_origin(repo, cache) == "stored"


def test_too_much_changed_while_closed_builds_the_graph_again(
        repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "cache"
    opened(repo, cache).graph()
    (repo / "shop" / "sale.py").write_text("def apply_discount(amount):\n    return 0\n")
    monkeypatch.setattr(derived, "REDO_FILES", 0)  # anything to redo is too much
    assert_opens_as_built(repo, cache, "built")


def test_a_corrupt_saved_graph_is_rebuilt_and_replaced(repo: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first = opened(repo, cache)
    first.graph()
    blob = bytearray(saved_blob(first, graph_store.NAME))
    first.close()
    blob[-3] ^= 0xFF  # a flipped byte in the edge weights: the checksum no longer holds
    db = sqlite3.connect(str(first.dir / "index.sqlite"))
    db.execute("UPDATE saved SET data=? WHERE name=?", (bytes(blob), graph_store.NAME))
    db.commit()
    db.close()

    assert_opens_as_built(repo, cache, "built")
    assert reopened_origin(repo, cache) == "stored"


def test_a_crafted_saved_graph_with_a_valid_checksum_is_not_served(repo: Path,
                                                                   tmp_path: Path) -> None:
    """Edges pointing past the files, and an array asking for pickled objects, are refused
    however well the checksum matches."""
    cache = tmp_path / "cache"
    first = opened(repo, cache)
    graph = first.graph()
    found = saved.load(first.db, graph_store.NAME)
    assert found is not None
    arrays = {k: ("i4" if v.dtype.kind == "i" else "f8", v) for k, v in found.arrays.items()}
    arrays["dst"] = ("i4", np.full(len(graph.dst), len(graph.paths) + 7))
    assert saved.save(first.db, graph_store.NAME, graph_store.KEY, arrays, found.data)
    blob = saved_blob(first, graph_store.NAME)
    size = int.from_bytes(blob[:8], "little")
    header = json.loads(blob[8:8 + size])
    header["arrays"][0][1] = "O"
    pickled = json.dumps(header).encode()
    first.close()

    assert_opens_as_built(repo, cache, "built")
    forged = len(pickled).to_bytes(8, "little") + pickled + blob[8 + size:]
    with pytest.raises(saved.CorruptSaved):
        saved.unpack(forged)


def test_a_corrupt_saved_commit_search_is_rebuilt(repo: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    commit_fix(repo)
    first = opened(repo, cache)
    votes = first.commit_search().files_for(TITLE)
    assert votes
    first.close()
    db = sqlite3.connect(str(first.dir / "index.sqlite"))
    db.execute("UPDATE saved SET data=substr(data, 1, 40) WHERE name='commit_search'")
    db.commit()
    db.close()

    index = opened(repo, cache)
    assert index.commit_search().files_for(TITLE) == votes
    assert index.history_origin == "built"
    index.close()


def test_a_view_seeded_from_its_repository_loads_the_saved_graph(repo: Path,
                                                                  tmp_path: Path) -> None:
    """A workspace's view starts from a copy of its repository's index, which carries the
    graph: the view's first context does not build it."""
    cache = tmp_path / "cache"
    view = tmp_path / "view"
    view.mkdir()
    for path in ("shop/__init__.py", "shop/cart.py", "shop/pricing.py", "README.md"):
        (view / path).parent.mkdir(parents=True, exist_ok=True)
        (view / path).write_bytes((repo / path).read_bytes())
    cold = open_index(view, cache, seed=repo)
    cold.graph()
    assert cold.graph_origin == "built"
    assert share_with_seed(cold, cache)

    mine = open_index(repo, cache)
    assert_as_built(mine)
    assert mine.graph_origin == "stored"


def test_an_unchanged_store_opens_without_reconciling_its_term_indexes(
        repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The saved BM25 indexes are checked against the store's chunks only when chunks were
    added or removed since they were built (the store's key says so)."""
    cache = tmp_path / "cache"
    reconciled: list[Path] = []
    real = TermIndexes._reconcile

    def counting(terms: TermIndexes) -> None:
        reconciled.append(terms.root)
        real(terms)

    monkeypatch.setattr(TermIndexes, "_reconcile", counting)
    opened(repo, cache).close()
    opened(repo, cache).close()
    assert reconciled == []

    pricing = repo / "shop" / "pricing.py"
    pricing.write_text(pricing.read_text() + "\n\ndef gift_wrapping_fee():\n    return 3\n")
    changed = opened(repo, cache)  # the sweep after the open finds it
    assert [h.path for h in changed.search("gift wrapping fee")][:1] == ["shop/pricing.py"]
    changed.close()
    again = RepoIndex(repo, cache)  # its chunks are not in the saved indexes: reconciled
    assert reconciled == [again.root]
    assert [h.path for h in again.search("gift wrapping fee")][:1] == ["shop/pricing.py"]
    again.close()


def test_the_checksum_is_a_crc_of_the_blob_and_an_older_one_reads_as_nothing_saved(
        repo: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first = opened(repo, cache)
    first.graph()
    row = first.db.execute("SELECT digest FROM saved WHERE name=?", (graph_store.NAME,)
                           ).fetchone()
    assert row[0] == f"crc32:{zlib.crc32(saved_blob(first, graph_store.NAME)):08x}"
    # A row saved with the earlier checksum (a blake2b hex digest): built again, not served.
    first.db.execute("UPDATE saved SET digest=? WHERE name=?", ("0" * 32, graph_store.NAME))
    first.close()
    assert_opens_as_built(repo, cache, "built")
    assert reopened_origin(repo, cache) == "stored"


@pytest.mark.parametrize("disorder", ["pairs", "names"])
def test_a_saved_graph_out_of_order_is_not_served(repo: Path, tmp_path: Path,
                                                  disorder: str) -> None:
    """An edit updates the graph by merging into its pairs and its edges by name, so a saved
    graph whose pairs are out of order (or whose edges by name are not grouped) is built
    again, in range though every index is."""
    for i in range(4):
        (repo / f"mod{i}.py").write_text(
            f"def f{i}(x):\n    return g{i}(x)\n\n\ndef g{i}(x):\n    return f{(i + 1) % 4}(x)\n")
    cache = tmp_path / "cache"
    first = opened(repo, cache)
    first.graph()
    found = saved.load(first.db, graph_store.NAME)
    assert found is not None
    arrays = {k: ("i4" if v.dtype.kind == "i" else "f8", v) for k, v in found.arrays.items()}
    key = "pair_src" if disorder == "pairs" else "by_name"
    names = found.arrays["edge_name"][found.arrays["by_name"]]
    assert len(set(found.arrays["pair_src"].tolist())) > 2 and len(set(names.tolist())) > 2
    arrays[key] = ("i4", arrays[key][1][::-1].copy())
    assert saved.save(first.db, graph_store.NAME, graph_store.KEY, arrays, found.data)
    first.close()

    assert_opens_as_built(repo, cache, "built")
