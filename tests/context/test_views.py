from __future__ import annotations

from pathlib import Path

from codeloop.context.outline import outline, show_file
from codeloop.context.repomap import build_repo_map
from codeloop.context.retrieval import build_task_context
from codeloop.context.tokens import get_counter
from codeloop.index.service import RepoIndex

SOURCE = "import os\n\n\nclass Store:\n    def load(self, key):\n" + \
    "".join(f"        value_{i} = key * {i}\n" for i in range(50)) + \
    "        return key\n\n    def save(self, key,\n             value):\n" + \
    "".join(f"        os.write({i})\n" for i in range(50)) + "\n\ndef helper():\n    return 1\n"


def test_token_counts_are_exact_and_offline() -> None:
    counter = get_counter()
    assert not counter.estimated
    assert counter.count("hello world") == 2
    assert get_counter("cl100k_base").count("hello world") == 2


def test_outline_elides_bodies_but_keeps_signatures() -> None:
    text = outline("store.py", SOURCE)
    assert "     5│     def load(self, key):" in text
    assert "     7│" not in text  # inside load's body
    assert "⋮ (lines 6-56 elided)" in text
    assert "             value):" in text  # a multi-line signature is kept whole
    assert "def helper():" in text


def test_show_file_full_when_it_fits_else_outline() -> None:
    full, mode = show_file("store.py", SOURCE, 10_000)
    assert mode == "full" and "value_49" in full
    short, mode = show_file("store.py", SOURCE, 300)
    assert mode == "outline" and "value_49" not in short and "elided" in short


def make_repo(root: Path) -> None:
    (root / "billing").mkdir(parents=True)
    (root / "billing" / "invoice.py").write_text(
        "from billing.tax import tax_for\n\n\nclass Invoice:\n    def total(self):\n"
        "        return tax_for(self.amount)\n")
    (root / "billing" / "tax.py").write_text("def tax_for(amount):\n    return amount * 0.2\n")
    for i in range(30):
        (root / "billing" / f"other_{i}.py").write_text(f"def unrelated_{i}():\n    return {i}\n")


def test_repo_map_and_task_context_within_budget(tmp_path: Path) -> None:
    make_repo(tmp_path)
    index = RepoIndex(tmp_path)
    index.update()
    repo_map = build_repo_map(index, "Invoice.total computes tax wrong", 120)
    assert repo_map.files[0] == "billing/invoice.py"
    assert repo_map.tokens <= 120
    assert ("billing/invoice.py", 5) in repo_map.shown
    context = build_task_context(index, "Invoice.total computes tax_for wrong", 600)
    assert context.tokens <= 600
    assert any(s.path == "billing/tax.py" for s in context.snippets)
    assert "     2│     return amount * 0.2" in context.text
