"""The index's tables of its paths follow files that come and go without being built again,
and hold what a build from the current paths holds."""

from __future__ import annotations

from pathlib import Path

import pytest

from codeloop.index import focus, path_tables, pointers
from codeloop.index.path_tables import PathTables, grouped
from codeloop.index.rank import is_test_path, rank_files
from codeloop.index.service import RepoIndex


def suffix_keys(path: str) -> list[str]:
    # `core.py` twice: a key given twice lists the path twice, as the focus's table does.
    parts = path.split("/")
    return ["/".join(parts[i:]) for i in range(len(parts))] + ["x"] * (path.count("core") * 2)


def test_a_path_that_comes_and_goes_leaves_the_tables_as_a_build_would() -> None:
    tables = PathTables()
    tables.paths = ["a/core.py", "b/util.py", "c/core.py"]
    table = tables.table("suffixes", suffix_keys)
    held = table["core.py"]
    tables.values["set"] = frozenset(tables.paths)

    tables.moved("b/core.py", present=True)
    assert tables.paths == ["a/core.py", "b/core.py", "b/util.py", "c/core.py"]
    assert table == grouped(tables.paths, suffix_keys)
    assert table["x"] == ["a/core.py"] * 2 + ["b/core.py"] * 2 + ["c/core.py"] * 2
    assert held == ["a/core.py", "c/core.py"]  # a list handed out is replaced, not changed
    assert tables.values == {}  # the other values are made again

    tables.moved("b/util.py", present=False)
    tables.moved("a/core.py", present=False)
    assert table == grouped(tables.paths, suffix_keys)
    assert "util.py" not in table and "b/util.py" not in table  # no empty list left

    before = {k: list(v) for k, v in table.items()}
    tables.moved("c/core.py", present=True)  # already there: nothing changes
    tables.moved("z/none.py", present=False)  # never there
    assert table == before


def tables_of(index: RepoIndex) -> dict[str, dict[str, list[str]]]:
    focus.focus_of(index, "pkg/cart.py")
    focus.path_term_files(index, "cart money")
    pointers.frame_files(index, 'File "/x/pkg/cart.py", line 1')
    pointers.tested_sources(index, ["tests/test_cart.py"], is_test_path)
    return {name: keys_of_table[1] for name, keys_of_table in index._memos._paths._tables.items()}


def assert_as_built(index: RepoIndex) -> None:
    paths = [str(r[0]) for r in index.db.execute(
        "SELECT path FROM files WHERE indexed=1 ORDER BY path")]
    assert index.paths() == paths
    for keys_of, table in index._memos._paths._tables.values():
        assert table == grouped(paths, keys_of)


def test_files_added_and_removed_update_the_indexs_tables_in_place(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "pkg" / "money.py").write_text("def to_cents(x):\n    return int(x * 100)\n")
    (root / "pkg" / "cart_total.py").write_text("def total(items):\n    return sum(items)\n")
    (root / "tests" / "test_cart.py").write_text("def test_total():\n    assert True\n")
    index = RepoIndex(root)
    index.update()
    built = tables_of(index)
    assert set(built) == {"path_suffixes", "path_components", "path_tails",
                          "file_stems:codeloop.index.rank.is_test_path"}
    assert "pkg/cart_total.py" in built["file_stems:codeloop.index.rank.is_test_path"]["cart_"]

    def no_build(*args: object) -> None:
        raise AssertionError("a path table was built again")
    monkeypatch.setattr(path_tables, "grouped", no_build)

    (root / "pkg" / "cart.py").write_text("def checkout(items):\n    return items\n")
    (root / "pkg" / "sub").mkdir()
    (root / "pkg" / "sub" / "__init__.py").write_text("X = 1\n")
    index.notify_changed(["pkg/cart.py", "pkg/sub/__init__.py"])
    assert tables_of(index) == built  # the same tables, changed in place
    assert built["path_suffixes"]["pkg.sub"] == ["pkg/sub/__init__.py"]
    assert built["file_stems:codeloop.index.rank.is_test_path"]["cart"] == ["pkg/cart.py"]
    # The ranker finds the new module by the test's name, the tables being current.
    assert "pkg/cart.py" in [p for p, _ in rank_files(index, "tests/test_cart.py fails")]

    (root / "pkg" / "money.py").unlink()
    index.notify_changed(["pkg/money.py"])
    assert "money" not in built["path_components"]
    monkeypatch.setattr(path_tables, "grouped", grouped)
    assert_as_built(index)

    # A sweep finds changes by itself: the same tables, still current.
    (root / "pkg" / "cart.py").unlink()
    (root / "pkg" / "money.py").write_text("def to_cents(x):\n    return x\n")
    index.update()
    assert tables_of(index) == built
    assert_as_built(index)


def test_changes_rolled_back_leave_no_path_behind_in_the_tables(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "money.py").write_text("def to_cents(x):\n    return x\n")
    index = RepoIndex(root)
    index.update()
    tables_of(index)
    (root / "pkg" / "cart.py").write_text("def total(items):\n    return items\n")
    (root / "pkg" / "tax.py").write_text("def vat(x):\n    return x\n")
    real_apply = index._writer.apply

    def fail_on_tax(rel: str, *args: object) -> str:
        if rel == "pkg/tax.py":
            raise OSError("disk full")
        return real_apply(rel, *args)  # type: ignore[arg-type]
    monkeypatch.setattr(index._writer, "apply", fail_on_tax)
    with pytest.raises(OSError):
        index.notify_changed(["pkg/cart.py", "pkg/tax.py"])  # cart.py added, then undone
    assert "pkg/cart.py" not in index.paths()
    tables_of(index)
    assert_as_built(index)
