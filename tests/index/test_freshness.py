"""Incremental updates never serve stale content: edit, delete, rename, branch switch."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path

from codeloop.index.registry import open_index
from codeloop.index.service import RepoIndex
from codeloop.index.watch import IndexWatcher


def paths_for(index: RepoIndex, query: str) -> list[str]:
    return [h.path for h in index.search(query)]


def test_cold_then_reopen_reuses_the_index(repo: Path) -> None:
    index = RepoIndex(repo)
    first = index.update()
    assert first.added == 4 and first.changed == 0
    index.close()
    again = RepoIndex(repo)
    second = again.update()
    assert second.added == second.changed == second.removed == 0
    assert second.unchanged == 4
    assert paths_for(again, "apply discount percentage")[0] == "shop/pricing.py"


def test_edit_is_reindexed_and_old_text_never_served(repo: Path) -> None:
    index = RepoIndex(repo, sweep_interval=3600)
    index.update()
    assert index.find_symbol("apply_discount")[0].start_line == 4
    pricing = repo / "shop" / "pricing.py"
    old_stat = pricing.stat()
    pricing.write_text("\n\n\ndef apply_coupon(amount, code):\n    return amount\n\n\n"
                       "def apply_discount(amount, percent=0):\n    return amount\n")
    # Same size-insensitive stat as before: only the hash check can notice this edit.
    os.utime(pricing, ns=(old_stat.st_atime_ns, old_stat.st_mtime_ns))
    hits = index.search("apply coupon")
    assert hits and hits[0].path == "shop/pricing.py"
    assert "apply_coupon" in hits[0].text
    assert index.find_symbol("apply_discount")[0].start_line == 8
    for hit in index.search("discount percentage"):
        assert "Reduce an amount" not in hit.text


def test_notify_changed_updates_at_once(repo: Path) -> None:
    index = RepoIndex(repo, sweep_interval=3600)
    index.update()
    (repo / "shop" / "cart.py").write_text("def checkout_basket():\n    pass\n")
    index.notify_changed(["shop/cart.py"])
    assert [h.name for h in index.find_symbol("checkout_basket")] == ["checkout_basket"]
    assert index.find_symbol("ShoppingCart") == []


def test_deleted_file_is_never_served(repo: Path) -> None:
    index = RepoIndex(repo, sweep_interval=3600)
    index.update()
    (repo / "shop" / "pricing.py").unlink()
    assert "shop/pricing.py" not in paths_for(index, "apply discount percentage")
    assert index.find_symbol("apply_discount") == []
    assert all(r.path != "shop/pricing.py" for r in index.find_references("apply_discount"))
    # The stale hits already dropped the file; the sweep finds nothing left to remove.
    assert "shop/pricing.py" not in index.paths()


def test_rename_moves_definitions(repo: Path, run_git: Callable[..., str]) -> None:
    index = RepoIndex(repo, sweep_interval=0)
    index.update()
    run_git(repo, "mv", "shop/pricing.py", "shop/discounts.py")
    assert [h.path for h in index.find_symbol("apply_discount")] == ["shop/discounts.py"]
    assert paths_for(index, "apply discount")[0] == "shop/discounts.py"


def test_branch_switch_sweeps_on_head_change(repo: Path, run_git: Callable[..., str]) -> None:
    run_git(repo, "checkout", "-q", "-b", "feature")
    (repo / "shop" / "pricing.py").write_text("def apply_voucher(amount):\n    return amount\n")
    (repo / "shop" / "shipping.py").write_text("def shipping_cost(weight):\n    return 5\n")
    run_git(repo, "add", "-A")
    run_git(repo, "commit", "-qm", "feature")
    run_git(repo, "checkout", "-q", "main")
    index = RepoIndex(repo, sweep_interval=3600)  # only the HEAD change may trigger a sweep
    index.update()
    assert index.find_symbol("shipping_cost") == []
    run_git(repo, "checkout", "-q", "feature")
    assert [h.path for h in index.find_symbol("shipping_cost")] == ["shop/shipping.py"]
    assert index.find_symbol("apply_discount") == []
    assert "apply_voucher" in index.search("voucher")[0].text
    run_git(repo, "checkout", "-q", "main")
    assert index.find_symbol("shipping_cost") == []
    assert index.find_symbol("apply_discount")[0].path == "shop/pricing.py"


def test_new_file_in_ignored_directory_is_not_indexed(repo: Path) -> None:
    (repo / ".gitignore").write_text("scratch/\n")
    index = RepoIndex(repo, sweep_interval=3600)
    index.update()
    (repo / "scratch").mkdir()
    (repo / "scratch" / "tmp.py").write_text("def hidden_helper():\n    pass\n")
    index.notify_changed(["scratch/tmp.py"])
    assert index.find_symbol("hidden_helper") == []


def test_many_changes_rebuild_the_base_index(repo: Path) -> None:
    index = RepoIndex(repo, sweep_interval=3600)
    index.update()
    for i in range(250):
        (repo / "shop" / f"gen_{i}.py").write_text(f"def generated_function_{i}():\n    pass\n")
    stats = index.update()
    assert stats.added == 250 and stats.lexical_rebuilt
    assert index.search("generated_function_17")[0].path == "shop/gen_17.py"
    index.close()
    reopened = RepoIndex(repo, sweep_interval=3600)
    assert reopened.search("generated_function_200")[0].path == "shop/gen_200.py"


def test_workspace_copy_is_seeded_from_the_repository_index(repo: Path, tmp_path: Path) -> None:
    RepoIndex(repo).update()
    copy = tmp_path / "copy"
    shutil.copytree(repo, copy)
    (copy / "shop" / "pricing.py").write_text("def price_in_copy():\n    pass\n")
    index = open_index(copy, seed=repo)
    assert [h.path for h in index.find_symbol("price_in_copy")] == ["shop/pricing.py"]
    assert index.find_symbol("apply_discount") == []
    assert index.find_symbol("ShoppingCart")[0].path == "shop/cart.py"


def test_watcher_reindexes_changed_files(repo: Path) -> None:
    index = RepoIndex(repo, sweep_interval=3600)
    index.update()
    watcher = IndexWatcher(index)
    watcher.start()
    try:
        # The watcher subscribes on its thread, which on a loaded machine may come after a
        # single change: write again every second until it is seen (or the deadline).
        target = repo / "shop" / "coupons.py"
        deadline = time.monotonic() + 20
        found: list[tuple[str]] = []
        written = 0.0
        while not found and time.monotonic() < deadline:
            if time.monotonic() - written > 1.0:
                target.write_text("def redeem_coupon(code):\n    pass\n")
                written = time.monotonic()
            time.sleep(0.1)
            # Read the table directly: find_symbol would itself re-index via a sweep.
            found = index.db.execute(
                "SELECT path FROM defs WHERE name='redeem_coupon'").fetchall()
        assert found == [("shop/coupons.py",)]
    finally:
        watcher.stop()
