"""The benchmarks' shared code, run on a tiny real repository: a git repository with a bare
mirror laid out as the benchmarks expect (`MIRRORS/owner+name/repo`) and two SWE-bench-style
instances of it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
if str(BENCHMARKS) not in sys.path:
    sys.path.insert(0, str(BENCHMARKS))

FILES = {
    "shop/cart.py": "def cart_total(items):\n    \"\"\"Sum of the cart.\"\"\"\n"
                    "    return sum(item.price for item in items)\n",
    "shop/discount.py": "def apply_discount(total, percent):\n"
                        "    return total - total * percent / 100\n",
    "shop/tests/test_cart.py": "from shop.cart import cart_total\n\n\n"
                               "def test_cart_total_discount_cart_total():\n"
                               "    assert cart_total([]) == 0  # cart_total discount cart\n",
    "docs/cart.rst": "Cart total\n==========\n\nThe cart total with a discount.\n",
}
PATCH = ("diff --git a/shop/cart.py b/shop/cart.py\n--- a/shop/cart.py\n+++ b/shop/cart.py\n"
         "@@ -1,3 +1,3 @@\n def cart_total(items):\n     \"\"\"Sum of the cart.\"\"\"\n"
         "-    return sum(item.price for item in items)\n"
         "+    return sum(item.price * item.count for item in items)\n")
PROBLEM = ("cart_total ignores the item count\n\n"
           "The cart total is wrong when an item is bought twice: `cart_total` adds each "
           "item's price once, whatever its count. A discount then applies to the wrong "
           "total.\n")
SECOND_PROBLEM = ("Cart total counts each item once\n\n"
                  "Buying two of an item charges for one: the price times the count is not "
                  "what `cart_total` sums.\n")


def _git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                          text=True).stdout


@pytest.fixture
def tiny_suite(tmp_path: Path) -> tuple[Path, Path, str]:
    """(instances file, mirrors directory, base commit) of two instances of `acme/shop`."""
    work = tmp_path / "work"
    for rel, text in FILES.items():
        (work / rel).parent.mkdir(parents=True, exist_ok=True)
        (work / rel).write_text(text)
    _git("init", "-q", cwd=work)
    _git("add", ".", cwd=work)
    _git("-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m",
         "Add the cart", cwd=work)
    commit = _git("rev-parse", "HEAD", cwd=work).strip()
    mirrors = tmp_path / "mirrors"
    mirrors.mkdir()
    _git("clone", "-q", "--bare", str(work), str(mirrors / "acme+shop" / "repo"), cwd=tmp_path)
    rows = [{"instance_id": f"acme__shop-{n}", "repo": "acme/shop", "base_commit": commit,
             "problem_statement": problem, "patch": PATCH, "expected_spans": {},
             "created_at": "2026-01-01T00:00:00Z", "version": "1.0"}
            for n, problem in ((1, PROBLEM), (2, SECOND_PROBLEM))]
    instances = tmp_path / "instances.jsonl"
    instances.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return instances, mirrors, commit
