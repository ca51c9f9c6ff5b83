from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest


def git(repo: Path, *args: str) -> str:
    proc = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True)
    return proc.stdout


@pytest.fixture
def run_git() -> Callable[..., str]:
    return git


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A small real git repository with Python code in two packages."""
    root = tmp_path / "repo"
    (root / "shop").mkdir(parents=True)
    (root / "shop" / "__init__.py").write_text("")
    (root / "shop" / "cart.py").write_text(
        "from shop.pricing import apply_discount\n\n\n"
        "class ShoppingCart:\n"
        "    def __init__(self):\n"
        "        self.items = []\n\n"
        "    def add_item(self, item, quantity=1):\n"
        "        self.items.append((item, quantity))\n\n"
        "    def total_price(self):\n"
        "        return apply_discount(sum(i.price * q for i, q in self.items))\n"
    )
    (root / "shop" / "pricing.py").write_text(
        "VAT_RATE = 0.2\n\n\n"
        "def apply_discount(amount, percent=0):\n"
        "    \"\"\"Reduce an amount by a percentage discount.\"\"\"\n"
        "    return amount * (1 - percent / 100)\n"
    )
    (root / "README.md").write_text("# shop\nA tiny shop used by the index tests.\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.email", "t@example.com")
    git(root, "config", "user.name", "t")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "initial")
    return root
