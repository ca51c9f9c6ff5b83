"""Pointers an issue text gives: traceback frames, dotted module paths, `Class.method`."""

from __future__ import annotations

from pathlib import Path

from codeloop.index.pointers import (
    _stems,
    class_files,
    frame_files,
    method_files,
    module_files,
    source_files,
)
from codeloop.index.rank import Signals, fuse, is_test_path, rank_files, signals
from codeloop.index.service import RepoIndex

TRACEBACK = """\
Traceback (most recent call last):
  File "/home/me/app.py", line 3, in <module>
    cart.total_price()
  File "/usr/lib/python3.11/site-packages/shop/cart.py", line 12, in total_price
    return apply_discount(sum(i.price * q for i, q in self.items))
  File "/usr/lib/python3.11/site-packages/shop/pricing.py", line 6, in apply_discount
    return amount * (1 - percent / 100)
TypeError: unsupported operand
"""


def test_traceback_frames_from_an_installed_copy_name_repository_files(repo: Path) -> None:
    index = RepoIndex(repo)
    index.update()
    # Innermost frame first; the reporter's own script is not in the repository.
    assert frame_files(index, TRACEBACK) == ["shop/pricing.py", "shop/cart.py"]
    assert frame_files(index, "pytest says shop/cart.py:12: AssertionError") == ["shop/cart.py"]
    assert frame_files(index, "nothing here points at a file") == []


def test_dotted_module_paths_with_a_name_after_them(repo: Path) -> None:
    index = RepoIndex(repo)
    index.update()
    text = "Calling shop.pricing.apply_discount(5) fails; so does shop.cart.ShoppingCart."
    assert module_files(index, text) == ["shop/pricing.py", "shop/cart.py"]
    # A bare package name is not a pointer to its __init__.py.
    assert module_files(index, "the shop package") == []


def test_class_method_pairs_are_found_under_their_class(repo: Path) -> None:
    (repo / "shop" / "other.py").write_text(
        "class Basket:\n    def total_price(self):\n        return 0\n")
    index = RepoIndex(repo)
    index.update()
    assert method_files(index, "ShoppingCart.total_price is wrong") == ["shop/cart.py"]
    assert method_files(index, "Basket.total_price is wrong") == ["shop/other.py"]
    assert method_files(index, "Unknown.total_price is wrong") == []


def test_a_method_the_class_lacks_still_points_at_the_class(repo: Path) -> None:
    # `Contains.as_set returns Contains` (sympy-23950): the fix adds `as_set` to the class.
    (repo / "shop" / "other.py").write_text(
        "class Basket:\n    def total_price(self):\n        return 0\n\n\n"
        "def Helper():\n    return 1\n")
    index = RepoIndex(repo)
    index.update()
    assert method_files(index, "Basket.as_dict is missing") == []
    assert class_files(index, "Basket.as_dict is missing") == ["shop/other.py"]
    assert class_files(index, "ShoppingCart.refund and Basket.empty") == [
        "shop/other.py", "shop/cart.py"]
    assert class_files(index, "total_price is wrong; Unknown.x too") == []
    # Only classes: a function of that name is no class to point at.
    assert class_files(index, "Helper.thing") == []
    assert "shop/other.py" in signals(index, "Basket.as_dict is missing").lists["classes"]


def test_lower_case_and_private_classes_are_classes_too(repo: Path) -> None:
    # sympy's `log.eval` named nothing: its class is lower-case; `_MockObject` is private.
    (repo / "shop" / "functions.py").write_text(
        "class log:\n    def eval(self, arg):\n        return arg\n\n\n"
        "class _MockObject:\n    def __getitem__(self, key):\n        return key\n\n\n"
        "def x():\n    return 0\n")
    index = RepoIndex(repo)
    index.update()
    assert method_files(index, "log.eval") == ["shop/functions.py"]
    assert method_files(index, "_MockObject.__getitem__ fails") == ["shop/functions.py"]
    assert class_files(index, "_MockObject.missing") == ["shop/functions.py"]
    assert class_files(index, "log.eval") == ["shop/functions.py"]
    # A lower-case class points only with its method: else it is more often a variable.
    assert class_files(index, "log.missing") == []
    assert class_files(index, "x.missing and self.missing") == []
    # A lower-case name the repository has no class of is a variable: `x` is a function.
    assert method_files(index, "x.eval and self.eval and np.eval") == []


def test_a_traceback_puts_its_innermost_repository_frame_first(repo: Path) -> None:
    index = RepoIndex(repo)
    index.update()
    # The prose is about the cart; the traceback says where the error was raised.
    prose = "The shopping cart crashes."
    frame = ('Traceback (most recent call last):\n'
             '  File "/srv/venv/lib/python3.11/site-packages/shop/pricing.py", line 6\n'
             'TypeError: unsupported operand\n')
    assert rank_files(index, prose)[0][0] == "shop/cart.py"
    assert rank_files(index, f"{prose}\n\n{frame}")[0][0] == "shop/pricing.py"


def test_a_failing_test_lifts_the_module_it_tests(repo: Path) -> None:
    (repo / "shop" / "shipping.py").write_text(
        "def shipping_cost(weight):\n    return 5 + weight * 0.5\n")
    (repo / "shop" / "tests").mkdir()
    (repo / "shop" / "tests" / "test_shipping.py").write_text(
        "from shop.shipping import shipping_cost\n\n\n"
        "def test_heavy_parcel_surcharge():\n"
        "    assert heavy_parcel_surcharge(30) == 12\n")
    index = RepoIndex(repo)
    index.update()
    text = "test_heavy_parcel_surcharge fails after the last release"
    found = signals(index, text)
    assert found.tested == {"shop/tests/test_shipping.py": ["shop/shipping.py"]}
    with_tested = dict(fuse(found))
    without = dict(fuse(Signals(found.lists, found.scores)))
    assert with_tested["shop/shipping.py"] > without["shop/shipping.py"]
    # Above every other source module, whatever the other lists said.
    assert max(with_tested, key=lambda p: with_tested[p] if "tests/" not in p else 0) == \
        "shop/shipping.py"


def test_source_files_of_a_test_by_its_name() -> None:
    stems = _stems(["sympy/simplify/cse_main.py", "sympy/simplify/cse_opts.py",
                    "src/_pytest/terminal.py", "a/utils.py", "b/utils.py", "c/utils.py",
                    "testing/test_terminal.py"], is_test_path)
    # No `cse.py`: the `cse_*` modules beside it (two, so not ambiguous).
    assert source_files(stems, "sympy/simplify/tests/test_cse.py") == [
        "sympy/simplify/cse_main.py", "sympy/simplify/cse_opts.py"]
    assert source_files(stems, "testing/test_terminal.py") == ["src/_pytest/terminal.py"]
    assert source_files(stems, "x/tests/test_utils.py") == []  # three candidates, none nearer
    assert source_files(stems, "a/tests/test_utils.py") == ["a/utils.py"]
    assert source_files(stems, "tests/conftest.py") == []
