from __future__ import annotations

from pathlib import Path

import pytest

from codeloop.index import exact
from codeloop.index.exact import BadPattern, grep
from codeloop.index.rank import rank_files
from codeloop.index.ripgrep import find_ripgrep
from codeloop.index.service import RepoIndex


def test_search_finds_the_function_chunk(repo: Path) -> None:
    index = RepoIndex(repo)
    index.update()
    hits = index.search("how is the discount applied to an amount")
    assert hits[0].path == "shop/pricing.py"
    assert hits[0].symbol == "apply_discount"
    assert hits[0].text.startswith("def apply_discount")


def test_camel_and_snake_parts_match(repo: Path) -> None:
    index = RepoIndex(repo)
    index.update()
    assert index.search("shopping cart")[0].path == "shop/cart.py"
    top = index.search("totalPrice")[0]
    assert top.symbol == "ShoppingCart" and "def total_price" in top.text


def test_find_symbol_and_references(repo: Path) -> None:
    index = RepoIndex(repo)
    index.update()
    [method] = index.find_symbol("ShoppingCart.add_item")
    assert (method.path, method.start_line, method.kind) == ("shop/cart.py", 8, "method")
    assert [h.name for h in index.find_symbol("apply_")] == ["apply_discount"]
    [ref] = index.find_references("apply_discount")
    assert (ref.path, ref.line) == ("shop/cart.py", 12)
    assert "apply_discount(sum(" in ref.text


def test_rank_files_prefers_mentioned_definitions(repo: Path) -> None:
    index = RepoIndex(repo)
    index.update()
    ranked = [p for p, _ in rank_files(index, "ShoppingCart.total_price returns the wrong sum")]
    assert ranked[0] == "shop/cart.py"


@pytest.mark.parametrize("use_rg", [True, False])
def test_exact_grep_with_and_without_ripgrep(repo: Path, use_rg: bool,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    if use_rg and find_ripgrep() is None:
        pytest.skip("ripgrep is not installed")
    if not use_rg:
        # Forces the pure-Python path, which runs where the rg binary is missing.
        monkeypatch.setattr(exact, "find_ripgrep", lambda: None)
    matches = grep(repo, r"def \w+_discount")
    assert [(m.path, m.line) for m in matches] == [("shop/pricing.py", 4)]
    assert grep(repo, "VAT_RATE = 0.2", regex=False)[0].line == 1
    with pytest.raises(BadPattern):
        grep(repo, "def (unclosed")
