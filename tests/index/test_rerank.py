"""The learnt reordering of the fused head (`index.rerank`), as `rank.order` applies it."""

from __future__ import annotations

from pathlib import Path

from codeloop.index.rank import Signals, fuse, is_test_path, order, rank_files, signals
from codeloop.index.rerank import FEATURES, RERANK_DEPTH, WEIGHTS, features, rerank
from codeloop.index.service import RepoIndex

# Fusion puts the test file first: three lists have it high, history has only it.
TEST_FIRST = Signals({
    "chunks": ["pkg/a.py", "pkg/b.py", "pkg/tests/test_x.py", "pkg/y.py", "pkg/x.py"],
    "files": ["pkg/a.py", "pkg/tests/test_x.py", "pkg/b.py", "pkg/x.py", "pkg/y.py"],
    "history": ["pkg/tests/test_x.py"],
}, {})


def test_a_test_file_fusion_puts_first_goes_below_the_source_files_after_it() -> None:
    assert [p for p, _ in fuse(TEST_FIRST)][:3] == ["pkg/tests/test_x.py", "pkg/a.py",
                                                    "pkg/b.py"]
    assert [p for p, _ in order(TEST_FIRST)][:3] == ["pkg/a.py", "pkg/b.py",
                                                     "pkg/tests/test_x.py"]
    # With the model's weights at zero the fused order stands.
    zero = dict.fromkeys(FEATURES, 0.0)
    assert rerank(fuse(TEST_FIRST), TEST_FIRST, is_test_path, zero) == fuse(TEST_FIRST)


def test_a_package_init_goes_below_the_module_beside_it_that_it_barely_led() -> None:
    both = ["pkg/a.py", "pkg/b.py", "pkg/c/__init__.py", "pkg/c/x.py"]
    found = Signals({"chunks": both, "files": both}, {})
    assert [p for p, _ in fuse(found)][2:] == ["pkg/c/__init__.py", "pkg/c/x.py"]
    assert [p for p, _ in order(found)] == ["pkg/a.py", "pkg/b.py", "pkg/c/x.py",
                                            "pkg/c/__init__.py"]
    row = features(fuse(found), found, is_test_path)[2]
    assert row[FEATURES.index("package_init")] == 1.0
    assert row[FEATURES.index("lists_agree")] == 2.0


def test_a_module_a_head_test_file_tests_is_marked() -> None:
    found = Signals({"chunks": ["pkg/tests/test_x.py", "pkg/a.py", "pkg/x.py"]}, {},
                    {"pkg/tests/test_x.py": ["pkg/x.py"]})
    fused = fuse(found)
    column = FEATURES.index("tested_by_head")
    marks = dict(zip([p for p, _ in fused], features(fused, found, is_test_path)[:, column],
                     strict=True))
    assert marks["pkg/x.py"] > 0 and marks["pkg/a.py"] == 0


def test_places_keep_fusions_scores_and_the_tail_is_untouched() -> None:
    head = [f"pkg/m{i:03}.py" for i in range(RERANK_DEPTH + 10)]
    found = Signals({"chunks": head, "files": ["pkg/tests/test_m.py", *head[:3]]}, {})
    fused = fuse(found, limit=len(head) + 1)
    ordered = order(found, limit=len(head) + 1)
    assert [s for _, s in ordered] == [s for _, s in fused]  # the ladder, still in order
    assert sorted(p for p, _ in ordered) == sorted(p for p, _ in fused)
    assert ordered[RERANK_DEPTH:] == fused[RERANK_DEPTH:]
    assert order(found, limit=5) == ordered[:5]


def test_the_shipped_model_demotes_tests_and_prefers_agreement() -> None:
    assert set(WEIGHTS) == set(FEATURES)
    assert WEIGHTS["test"] < 0 < WEIGHTS["lists_agree"]


def test_rank_files_is_the_reordered_fusion_of_the_signals(repo: Path) -> None:
    index = RepoIndex(repo)
    index.update()
    text = "ShoppingCart.total_price ignores the discount from apply_discount"
    assert rank_files(index, text, limit=10) == order(signals(index, text), limit=10)
