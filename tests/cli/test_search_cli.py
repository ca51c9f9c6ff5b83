"""`codeloop search QUERY` ranks as the agent's `search_code` tool does: one result per file,
source before tests, the same order, and an empty answer that says what was tried."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from codeloop.index.code_search import search_code
from codeloop.index.service import RepoIndex
from tests.cli.pty_driver import run_in_pty
from tests.cli.test_cli import cli

SGR = re.compile(r"\x1b\[[0-9;]*m")
FILES = {
    "shop/pricing.py": (
        "def apply_discount(price, discount):\n"
        "    \"\"\"Apply a discount to a price.\"\"\"\n"
        "    return price * (1 - discount)\n\n\n"
        "def discount_rate(customer):\n"
        "    return 0.1 if customer.loyal else 0.0\n\n\n"
        "def apply_discount_codes(price, codes):\n"
        "    for code in codes:\n"
        "        price = apply_discount(price, code.discount)\n"
        "    return price\n"),
    "shop/cart.py": (
        "from shop.pricing import apply_discount\n\n\n"
        "class Cart:\n"
        "    def total(self, items, discount):\n"
        "        return apply_discount(sum(items), discount)\n"),
    # A test that says the query's words more often than the code does.
    "tests/test_pricing.py": (
        "from shop.pricing import apply_discount\n\n\n"
        "def test_apply_discount():\n"
        "    # apply discount, apply discount again: the discount applies once\n"
        "    assert apply_discount(100, 0.1) == 90\n"
        "    assert apply_discount(apply_discount(100, 0.1), 0.0) == 90\n"),
    "shop/orders.py": "def order_total(order):\n    return sum(line.amount for line in order)\n",
}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    for args in (["init", "-q"], ["add", "-A"],
                 ["-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm",
                  "shop: pricing and cart"]):
        subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)
    return root


def _table_paths(text: str) -> list[str]:
    return re.findall(r"^\W*((?:shop|tests)/\w+\.py)", SGR.sub("", text), re.M)


def test_search_in_a_terminal_shows_one_row_per_file_source_first(tmp_path: Path,
                                                                  repo: Path) -> None:
    screen = run_in_pty(tmp_path, "search", "apply discount", "-C", str(repo), timeout=240)
    assert screen.code == 0, screen.text + screen.err.decode()
    paths = _table_paths(screen.text)
    assert paths[0] == "shop/pricing.py", screen.text
    assert len(paths) == len(set(paths)), screen.text  # files, not chunks
    assert paths.index("shop/cart.py") < paths.index("tests/test_pricing.py"), screen.text


def test_search_lists_what_search_code_ranks(tmp_path: Path, repo: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    out = cli(tmp_path, "search", "apply discount", "-C", str(repo), "--json", "-n", "3",
              timeout=240)
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)
    monkeypatch.setenv("CODELOOP_CACHE_DIR", str(tmp_path / "cache"))
    index = RepoIndex(repo)
    try:
        expected = search_code(index, "apply discount", 3)
    finally:
        index.close()
    assert [r["path"] for r in rows] == [r.path for r in expected.results]
    assert rows[0]["symbol"] is not None and rows[0]["start_line"] >= 1
    glob = json.loads(cli(tmp_path, "search", "apply discount", "-C", str(repo), "--json",
                          "--glob", "tests/*.py", timeout=240).stdout)
    assert [r["path"] for r in glob] == ["tests/test_pricing.py"]


def test_an_empty_search_says_what_was_tried(tmp_path: Path, repo: Path) -> None:
    screen = run_in_pty(tmp_path, "search", "zeppelin", "-C", str(repo), timeout=240)
    text = " ".join(SGR.sub("", screen.text).split())
    assert screen.code == 0, text
    assert "no results" in text and "Searched for the terms zeppelin" in text, text
