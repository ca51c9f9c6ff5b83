"""What the index derives (file graph, definitions, path tables) is updated for an edited
file instead of rebuilt, and is what a rebuild from scratch gives."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from codeloop.index import derived
from codeloop.index import graph as graph_module
from codeloop.index.graph import FileGraph, build_graph
from codeloop.index.service import RepoIndex


def edges(graph: FileGraph) -> set[tuple[str, str, float, str]]:
    name_of = {v: k for k, v in graph.names.items()}
    return {(graph.paths[s], graph.paths[d], round(float(w), 6), name_of.get(int(n), "<import>"))
            for s, d, w, n in zip(graph.src, graph.dst, graph.weight, graph.edge_name,
                                  strict=True)}


def walk_matrix(graph: FileGraph) -> dict[tuple[str, str], float]:
    assert graph.walk is not None
    coo = graph.walk.tocoo()
    return {(graph.paths[c], graph.paths[r]): round(float(v), 6)
            for r, c, v in zip(coo.row, coo.col, coo.data, strict=True)}


def assert_as_a_build_gives(graph: FileGraph, index: RepoIndex) -> None:
    fresh = build_graph(index.db)
    assert edges(graph) == edges(fresh)
    assert walk_matrix(graph) == walk_matrix(fresh)
    assert list(graph.out_weight) == list(fresh.out_weight)
    assert graph.shapes == fresh.shapes


def assert_derived_as_from_scratch(graph: FileGraph) -> None:
    """The summed pairs, the edges by name and the walk are those `_derive` makes from the
    same edges, to the bit."""
    fresh = FileGraph(graph.paths, graph.index, graph.src, graph.dst, graph.weight,
                      graph.edge_name, graph.names)
    graph_module._derive(fresh)
    for key in ("pair_src", "pair_dst", "pair_weight", "by_name", "name_starts",
                "out_weight"):
        assert np.array_equal(getattr(graph, key), getattr(fresh, key)), key
    assert graph.walk is not None and fresh.walk is not None
    assert (graph.walk != fresh.walk).nnz == 0


def updated_graph(index: RepoIndex, monkeypatch: pytest.MonkeyPatch) -> FileGraph:
    """The index's graph after a change, its derived arrays merged (deriving them from
    scratch fails), checked against `_derive` and against a build."""
    def scratch(*_args: object) -> None:
        raise AssertionError("derived from scratch")

    with monkeypatch.context() as m:
        m.setattr(graph_module, "_derive", scratch)
        graph = index.graph()
    assert_derived_as_from_scratch(graph)
    assert_as_a_build_gives(graph, index)
    return graph


def small_repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "money.py").write_text("def to_cents(x):\n    return int(x * 100)\n")
    (root / "pkg" / "tax.py").write_text("def vat(x):\n    return x * 0.2\n")
    (root / "pkg" / "cart.py").write_text(
        "from pkg.money import to_cents\n\n\ndef total(items):\n"
        "    return to_cents(sum(items))\n")
    return root


def test_an_edit_updates_the_graph_and_definitions_as_a_rebuild_would(tmp_path: Path) -> None:
    root = small_repo(tmp_path)
    index = RepoIndex(root)
    index.update()
    before = index.graph()
    index.definitions_in(["pkg/cart.py"])
    path_set = index.memo("path_set", lambda: frozenset(index.paths()))

    # Same names defined; the body now uses another module too.
    (root / "pkg" / "cart.py").write_text(
        "from pkg.money import to_cents\nfrom pkg.tax import vat\n\n\ndef total(items):\n"
        "    return to_cents(sum(items) + vat(sum(items)))\n")
    index.notify_changed(["pkg/cart.py"])
    after = index.graph()
    assert after is not before and after.paths is before.paths  # updated, not rebuilt
    fresh = build_graph(index.db)
    assert edges(after) == edges(fresh)
    assert ("pkg/cart.py", "pkg/tax.py", 1.0, "vat") in edges(after)
    assert walk_matrix(after) == walk_matrix(fresh)
    assert list(after.out_weight) == list(fresh.out_weight)
    [total] = index.definitions_in(["pkg/cart.py"])["pkg/cart.py"]
    assert (total.name, total.start_line) == ("total", 5)
    assert index.memo("path_set", frozenset) is path_set  # no file came or went

    # A new name defined: the edges of the files referring to it change too (the cart's
    # `to_cents` now has two definers, each edge half the weight), and only theirs.
    (root / "pkg" / "tax.py").write_text("def vat(x):\n    return x * 0.2\n\n\n"
                                         "def to_cents(x):\n    return 0\n")
    index.notify_changed(["pkg/tax.py"])
    renamed = index.graph()
    assert renamed.paths is before.paths  # updated, not rebuilt
    assert_as_a_build_gives(renamed, index)
    assert {e for e in edges(renamed) if e[0] == "pkg/cart.py" and e[3] == "to_cents"} == {
        ("pkg/cart.py", "pkg/money.py", 0.5, "to_cents"),
        ("pkg/cart.py", "pkg/tax.py", 0.5, "to_cents")}
    assert [d.name for d in index.definitions_in(["pkg/tax.py"])["pkg/tax.py"]] == \
        ["vat", "to_cents"]
    assert index.memo("path_set", frozenset) is path_set  # other names, the same files
    # ... and a name no longer defined: the cart's edge goes back to one definer.
    (root / "pkg" / "tax.py").write_text("def vat(x):\n    return x * 0.2\n")
    index.notify_changed(["pkg/tax.py"])
    assert_as_a_build_gives(index.graph(), index)
    assert ("pkg/cart.py", "pkg/money.py", 1.0, "to_cents") in edges(index.graph())

    (root / "pkg" / "new.py").write_text("def fresh():\n    return 1\n")
    index.notify_changed(["pkg/new.py"])
    assert "pkg/new.py" in index.memo("path_set", lambda: frozenset(index.paths()))
    index.close()


def test_a_name_that_many_files_refer_to_has_the_graph_built_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = small_repo(tmp_path)
    index = RepoIndex(root)
    index.update()
    before = index.graph()
    # Redoing every referring file would cost more than a build past this many files.
    monkeypatch.setattr(derived, "REDO_FILES", 0)
    (root / "pkg" / "tax.py").write_text("def vat(x):\n    return x * 0.2\n\n\n"
                                         "def to_cents(x):\n    return 0\n")
    index.notify_changed(["pkg/tax.py"])
    rebuilt = index.graph()
    assert rebuilt.paths is not before.paths
    assert_as_a_build_gives(rebuilt, index)
    index.close()


def test_a_new_file_joins_the_graph_as_a_rebuild_would(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = small_repo(tmp_path)
    # The cart imports a module that does not exist yet: no edge for it.
    (root / "pkg" / "cart.py").write_text(
        "from pkg.money import to_cents\nfrom pkg.rates import rate\n\n\ndef total(items):\n"
        "    return to_cents(sum(items)) * rate()\n")
    index = RepoIndex(root)
    index.update()
    index.graph()

    def no_build(*_args: object) -> None:
        raise AssertionError("the graph was built again")

    monkeypatch.setattr(derived, "build_graph", no_build)
    # The new module is imported by the cart and defines a second `to_cents`.
    (root / "pkg" / "rates.py").write_text(
        "def rate():\n    return 1\n\n\ndef to_cents(x):\n    return x\n")
    index.notify_changed(["pkg/rates.py"])
    graph = index.graph()
    assert graph.paths == sorted(graph.paths) and "pkg/rates.py" in graph.index
    monkeypatch.undo()
    assert_as_a_build_gives(graph, index)
    assert {e for e in edges(graph) if e[0] == "pkg/cart.py"} >= {
        ("pkg/cart.py", "pkg/rates.py", 1.0, "<import>"),
        ("pkg/cart.py", "pkg/rates.py", 0.5, "to_cents"),
        ("pkg/cart.py", "pkg/money.py", 0.5, "to_cents")}
    index.close()


def test_every_import_form_finds_a_file_added_later(tmp_path: Path) -> None:
    """One importer per form, Python (absolute, relative) and JS (bare, with its
    extension, a folder's index): each one's edge to its new file is there, as a build
    would have it."""
    root = tmp_path / "repo"
    (root / "app").mkdir(parents=True)
    (root / "web" / "widgets").mkdir(parents=True)
    importers = {"app/one.py": "import app.tools\n",
                 "app/two.py": "from .helpers import helper\n",
                 "web/one.js": "import { a } from './util';\n",
                 "web/two.js": "import { b } from './format.js';\n",
                 "web/three.js": "import { c } from './widgets';\n"}
    for rel, text in importers.items():
        (root / rel).write_text(text)
    index = RepoIndex(root)
    index.update()
    before = index.graph()
    added = {"app/tools.py": "TOOL = 1\n", "app/helpers.py": "HELP = 1\n",
             "web/util.js": "export const a = 1;\n", "web/format.js": "export const b = 2;\n",
             "web/widgets/index.js": "export const c = 3;\n"}
    for rel, text in added.items():
        (root / rel).write_text(text)
    index.notify_changed(list(added))
    graph = index.graph()
    assert graph.paths is not before.paths and set(added) <= set(graph.paths)
    assert_as_a_build_gives(graph, index)
    assert {(s, d) for s, d, _, name in edges(graph) if name == "<import>"} == {
        ("app/one.py", "app/tools.py"), ("app/two.py", "app/helpers.py"),
        ("web/one.js", "web/util.js"), ("web/two.js", "web/format.js"),
        ("web/three.js", "web/widgets/index.js")}
    index.close()


def test_a_removed_file_leaves_the_graph_as_a_rebuild_would(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Its edges go both ways; a name it shared with another file now points there alone;
    an import of it may now name another file. Also a rename, and a file gone and back
    before the graph was asked for."""
    root = small_repo(tmp_path)
    (root / "pkg" / "rates.py").write_text(
        "from pkg.tax import vat\n\n\ndef to_cents(x):\n    return vat(x)\n")
    (root / "web" / "widgets").mkdir(parents=True)
    (root / "web" / "widgets.js").write_text("export const c = 1;\n")
    (root / "web" / "widgets" / "index.js").write_text("export const c = 2;\n")
    (root / "web" / "page.js").write_text("import { c } from './widgets';\n")
    index = RepoIndex(root)
    index.update()
    before = index.graph()
    assert ("pkg/cart.py", "pkg/rates.py", 0.5, "to_cents") in edges(before)

    def no_build(*_args: object) -> None:
        raise AssertionError("the graph was built again")

    def removed(*rels: str) -> FileGraph:
        for rel in rels:
            (root / rel).unlink()
        index.notify_changed(list(rels))
        with monkeypatch.context() as m:
            m.setattr(derived, "build_graph", no_build)
            graph = index.graph()
        assert graph.paths is not before.paths and not set(rels) & set(graph.paths)
        assert_as_a_build_gives(graph, index)
        assert_derived_as_from_scratch(graph)
        return graph

    graph = removed("pkg/rates.py")
    assert ("pkg/cart.py", "pkg/money.py", 1.0, "to_cents") in edges(graph)
    assert not any("pkg/rates.py" in (s, d) for s, d, _, _ in edges(graph))

    imported = {d for s, d, _, _ in edges(graph) if s == "web/page.js"}
    assert len(imported) == 1
    graph = removed(*imported)  # `./widgets` is the other one now
    assert {d for s, d, _, _ in edges(graph) if s == "web/page.js"} == {
        "web/widgets.js", "web/widgets/index.js"} - imported

    (root / "pkg" / "tax.py").rename(root / "pkg" / "vat.py")
    index.notify_changed(["pkg/tax.py", "pkg/vat.py"])
    (root / "pkg" / "money.py").unlink()
    index.notify_changed(["pkg/money.py"])
    (root / "pkg" / "money.py").write_text("def to_cents(x):\n    return int(x)\n")
    index.notify_changed(["pkg/money.py"])
    monkeypatch.setattr(derived, "build_graph", no_build)
    graph = index.graph()
    monkeypatch.undo()
    assert "pkg/vat.py" in graph.index and "pkg/tax.py" not in graph.index
    assert_as_a_build_gives(graph, index)
    index.close()


def test_a_removed_file_reads_none_of_the_files_that_pointed_at_it_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Their edges' weights follow the names' fewer definers (across the five-definer
    discount too) and their imports the next candidate, without their rows being read or
    the graph's derived arrays made from scratch."""
    root = tmp_path / "repo"
    (root / "pkg" / "util").mkdir(parents=True)
    for i in range(6):  # `helper` and `_private` defined in six files: weights x0.1
        (root / "pkg" / f"impl{i}.py").write_text(
            "def helper(x):\n    return x\n\n\ndef _private(x):\n    return x\n")
    (root / "pkg" / "util.py").write_text("def tool():\n    return 1\n")
    (root / "pkg" / "util" / "__init__.py").write_text("def tool():\n    return 2\n")
    for i in range(60):  # more referrers than a redo would take (REDO_FILES)
        (root / "pkg" / f"user{i}.py").write_text(
            "import pkg.util\nfrom pkg.impl0 import helper\n\n\ndef run(x):\n"
            "    y = helper(x)\n    return helper(y) + _private(x) + pkg.util.tool()\n")
    index = RepoIndex(root)
    index.update()
    index.graph()
    redone: list[set[str]] = []
    real = derived.with_file_edges

    def recording(graph: FileGraph, db: object, paths: set[str], *rest: object) -> FileGraph:
        redone.append(set(paths))
        return real(graph, db, paths, *rest)  # type: ignore[arg-type]

    def no_build(*_args: object) -> None:
        raise AssertionError("the graph was built again")

    monkeypatch.setattr(derived, "with_file_edges", recording)
    monkeypatch.setattr(derived, "build_graph", no_build)
    for rel in ("pkg/impl0.py", "pkg/util.py"):
        (root / rel).unlink()
        index.notify_changed([rel])
        graph = updated_graph(index, monkeypatch)
    assert redone == [set(), set()]
    weights = {(d, n): w for s, d, w, n in edges(graph) if s == "pkg/user7.py"}
    # Five definers left: no discount for `helper` (sqrt(2) / 5); `_private` keeps its own.
    assert weights[("pkg/impl1.py", "helper")] == round(2 ** 0.5 / 5, 6)
    assert weights[("pkg/impl1.py", "_private")] == round(0.1 / 5, 6)
    assert weights[("pkg/util/__init__.py", "<import>")] == 1.0
    index.close()


def test_after_an_edit_the_derived_arrays_are_made_from_the_old_ones_to_the_bit(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The summed pairs, the edges by name and the walk after an edit (or a new file, which
    moves the ids after it) equal those derived from scratch from the same edges, without
    deriving them from scratch."""
    root = small_repo(tmp_path)
    for i in range(8):  # shared names: pairs of several edges, names of many edges
        (root / "pkg" / f"mod{i}.py").write_text(
            "from pkg.money import to_cents\nfrom pkg.tax import vat\n\n\n"
            f"def f{i}(x):\n    return to_cents(x) + vat(x) + f{(i + 1) % 8}(x)\n")
    index = RepoIndex(root)
    index.update()
    index.graph()

    edits = [("pkg/mod3.py", "def f3(x):\n    return vat(vat(x)) + f1(x) + f5(x)\n"),
             ("pkg/tax.py", "def vat(x):\n    return x * 0.2\n\n\ndef f2(x):\n    return x\n"),
             ("pkg/cart.py", "def total(items):\n    return 0\n"),
             ("pkg/aaa_new.py", "from pkg.tax import vat\n\n\ndef f9(x):\n    return vat(f1(x))\n"),
             ("pkg/zzz_new.py", "def f8(x):\n    return f9(x)\n")]
    for rel, text in edits:
        (root / rel).write_text(text)
        index.notify_changed([rel])
        updated_graph(index, monkeypatch)
    index.close()
