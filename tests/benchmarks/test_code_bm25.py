"""The baseline of the localisation and search benchmarks: BM25 over non-test source files,
from a checkout or straight from a mirror's objects."""

from __future__ import annotations

import subprocess
from pathlib import Path

from swebench_repos import CodeBm25, source_files


def test_source_files_leave_out_tests_docs_and_prose() -> None:
    paths = ["shop/cart.py", "shop/tests/test_cart.py", "tests/conftest.py",
             "shop/cart_test.go", "docs/cart.rst", "README.md", "shop/discount.py"]
    assert source_files(paths) == ["shop/cart.py", "shop/discount.py"]


def test_a_test_file_that_matches_best_is_not_ranked(tiny_suite: tuple[Path, Path, str]) -> None:
    _instances, mirrors, commit = tiny_suite
    bm25 = CodeBm25()
    bm25.index_commit(mirrors / "acme+shop" / "repo", commit)
    # The test file repeats every query word; a baseline with tests would rank it first.
    ranked = bm25.rank("cart_total discount cart")
    assert ranked[0] == "shop/cart.py"
    assert "shop/tests/test_cart.py" not in ranked


def test_the_mirror_and_a_checkout_give_the_same_ranking(
        tiny_suite: tuple[Path, Path, str], tmp_path: Path) -> None:
    _instances, mirrors, commit = tiny_suite
    checkout = tmp_path / "checkout"
    subprocess.run(["git", "clone", "-q", str(mirrors / "acme+shop" / "repo"), str(checkout)],
                   check=True)
    paths = sorted(p.relative_to(checkout).as_posix() for p in checkout.rglob("*")
                   if p.is_file() and ".git" not in p.parts)
    from_checkout, from_mirror = CodeBm25(), CodeBm25()
    from_checkout.index(checkout, paths)
    from_mirror.index_commit(mirrors / "acme+shop" / "repo", commit)
    assert from_mirror.paths == from_checkout.paths == ["shop/cart.py", "shop/discount.py"]
    for query in ("discount percent", "price of items", "cart total"):
        assert from_mirror.rank(query) == from_checkout.rank(query)
