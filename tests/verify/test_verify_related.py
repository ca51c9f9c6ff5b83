"""Picking the tests related to changed files by scanning test imports."""

from __future__ import annotations

from pathlib import Path

from codeloop.index.service import RepoIndex
from codeloop.verify.related import related_tests


def test_python_tests_that_import_the_changed_module(tmp_path: Path, write_tree) -> None:
    root = write_tree(tmp_path, {
        "src/shop/__init__.py": "",
        "src/shop/cart.py": "",
        "src/shop/price.py": "",
        "tests/test_cart.py": "from shop.cart import Cart\n",
        "tests/test_checkout.py": "import os\nfrom shop import cart, price\n",
        "tests/test_prices.py": "import shop.price as p\n",
        "tests/test_unrelated.py": "import json\n",
        "tests/unit/test_price.py": "x = 1\n",  # named for the module
        "tests/helpers.py": "from shop.cart import Cart\n",  # not a test file
    })
    assert related_tests(root, ["src/shop/cart.py"], "pytest") == ["tests/test_cart.py", "tests/test_checkout.py"]
    # The test named for the module comes first, then its importers.
    assert related_tests(root, ["src/shop/price.py"], "pytest") == [
        "tests/unit/test_price.py", "tests/test_checkout.py", "tests/test_prices.py",
    ]
    # A changed test file is related to itself; a non-Python change relates to nothing.
    assert related_tests(root, ["tests/test_unrelated.py"], "pytest") == ["tests/test_unrelated.py"]
    assert related_tests(root, ["README.md"], "pytest") == []


def test_tests_of_a_hub_module_are_ranked_closest_first(tmp_path: Path, write_tree) -> None:
    root = write_tree(tmp_path, {
        "lib/__init__.py": "",
        "lib/core/numbers.py": "",
        "lib/core/tests/test_arith.py": "from lib.core.numbers import Integer\n",
        "lib/core/tests/test_numbers.py": "x = 1\n",
        "lib/polys/tests/test_rings.py": "from lib.core.numbers import Integer\n",
        "lib/polys/numberfields/tests/test_numbers.py": "x = 1\n",
        "lib/a/tests/test_abc.py": "from lib.core.numbers import Rational\n",
        "lib/core/tests/test_changed.py": "x = 1\n",
    })
    changed = ["lib/core/numbers.py", "lib/core/tests/test_changed.py"]
    assert related_tests(root, changed, "pytest") == [
        "lib/core/tests/test_changed.py",  # edited itself
        "lib/core/tests/test_numbers.py",  # named for it, beside it
        "lib/polys/numberfields/tests/test_numbers.py",
        "lib/core/tests/test_arith.py",  # importers, the nearest first
        "lib/a/tests/test_abc.py",
        "lib/polys/tests/test_rings.py",
    ]


def test_js_tests_that_import_the_changed_file(tmp_path: Path, write_tree) -> None:
    root = write_tree(tmp_path, {
        "src/math.ts": "", "src/util/index.js": "",
        "src/math.test.ts": "import { add } from './math';\n",
        "test/util.spec.js": "const u = require('../src/util');\n",
        "test/other.spec.js": "import x from './x';\n",
    })
    assert related_tests(root, ["src/math.ts"], "npm test") == ["src/math.test.ts"]
    assert related_tests(root, ["src/util/index.js"], "yarn test") == ["test/util.spec.js"]


def test_go_changes_map_to_their_packages(tmp_path: Path) -> None:
    assert related_tests(tmp_path, ["calc.go", "sub/sub.go", "sub/x_test.go", "doc.md"], "go test") == [".", "./sub"]


def test_unknown_runners_get_nothing(tmp_path: Path) -> None:
    assert related_tests(tmp_path, ["src/lib.rs"], "cargo test") == []
    assert related_tests(tmp_path, ["src/lib.rs"], "make test") == []


def test_the_index_graph_finds_tests_that_use_re_exported_names(tmp_path: Path, write_tree) -> None:
    root = write_tree(tmp_path / "repo", {
        "pkg/__init__.py": "from pkg.impl import compute_total\n",
        "pkg/impl.py": "def compute_total(items):\n    return sum(items)\n",
        "tests/test_api.py": "from pkg import compute_total\n\n\ndef test_it():\n    assert compute_total([1]) == 1\n",
        "tests/test_other.py": "def test_nothing():\n    pass\n",
    })
    # The import scan alone cannot see that test_api uses pkg/impl.py.
    assert related_tests(root, ["pkg/impl.py"], "pytest") == []
    index = RepoIndex(root, tmp_path / "cache")
    try:
        index.update()
        assert related_tests(root, ["pkg/impl.py"], "pytest", index.graph()) == ["tests/test_api.py"]
    finally:
        index.close()


def test_tests_outside_the_configured_testpaths_are_left_out(tmp_path: Path, write_tree) -> None:
    files = {
        "src/app/core.py": "",
        "tests/test_core.py": "from app.core import run\n",
        "examples/demo/tests/test_demo.py": "from app.core import run\n",
    }
    plain = write_tree(tmp_path / "plain", files)
    assert related_tests(plain, ["src/app/core.py"], "pytest") == [
        "tests/test_core.py", "examples/demo/tests/test_demo.py",
    ]
    for config in ({"pyproject.toml": "[tool.pytest.ini_options]\ntestpaths = ['tests']\n"},
                   {"setup.cfg": "[tool:pytest]\ntestpaths = tests\n"},
                   {"pytest.ini": "[pytest]\ntestpaths =\n    tests\n"}):
        name = next(iter(config))
        root = write_tree(tmp_path / name, {**files, **config})
        assert related_tests(root, ["src/app/core.py"], "pytest") == ["tests/test_core.py"], name
