"""The learnt reordering of the fused head (`index.rerank`), as `rank.order` applies it."""

from __future__ import annotations

from pathlib import Path

from codeloop.index.rank import Signals, fuse, is_test_path, order, rank_files, signals
from codeloop.index.rerank import (
    FEATURES,
    HEAD_FEATURES,
    HEAD_WEIGHTS,
    RERANK_DEPTH,
    TOP,
    WEIGHTS,
    features,
    list_features,
    rerank,
)
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
    # With both models' weights at zero the fused order stands.
    zero = dict.fromkeys(HEAD_FEATURES, 0.0)
    assert rerank(fuse(TEST_FIRST), TEST_FIRST, is_test_path, zero, zero) == fuse(TEST_FIRST)


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


# Fusion puts a.py first (history, pagerank and path names); the text's own words (BM25
# over files and chunks, the identifiers it names) all put b.py first.
SPLIT_VOTE = Signals({
    "history": ["pkg/a.py"], "pagerank": ["pkg/a.py"], "paths": ["pkg/a.py"],
    "chunks": ["pkg/b.py"], "files": ["pkg/b.py"], "mentions": ["pkg/b.py"],
}, {})


def test_the_head_model_orders_the_first_places_by_where_each_list_has_them() -> None:
    fused = fuse(SPLIT_VOTE)
    assert [p for p, _ in fused] == ["pkg/a.py", "pkg/b.py"]
    without_head = rerank(fused, SPLIT_VOTE, is_test_path,
                          head_weights=dict.fromkeys(HEAD_FEATURES, 0.0))
    assert [p for p, _ in without_head] == ["pkg/a.py", "pkg/b.py"]
    assert [p for p, _ in order(SPLIT_VOTE)] == ["pkg/b.py", "pkg/a.py"]
    places = dict(zip([p for p, _ in fused], list_features(fused, SPLIT_VOTE).tolist(),
                      strict=True))
    assert places["pkg/b.py"][:3] == [1.0, 1.0, 1.0]  # first in files, chunks, mentions
    assert places["pkg/a.py"][:3] == [0.0, 0.0, 0.0]


def test_the_head_model_only_orders_the_files_the_first_model_put_first() -> None:
    # A head model that wants the deepest path first: the deep file at place TOP + 2 stays
    # out of the first TOP places, the deepest of those goes first.
    paths = [f"pkg/m{i}.py" for i in range(TOP + 2)] + ["pkg/x/y/z/deep.py"]
    paths[2] = "pkg/sub/m2.py"
    found = Signals({"chunks": paths, "files": paths}, {})
    fused = fuse(found, limit=len(paths))
    assert [p for p, _ in fused] == paths
    zero = dict.fromkeys(HEAD_FEATURES, 0.0)
    first_only = rerank(fused, found, is_test_path, zero, zero)
    deep_first = rerank(fused, found, is_test_path, zero, {**zero, "depth": 10.0})
    assert [p for p, _ in deep_first[:TOP]] == ["pkg/sub/m2.py", *[
        p for p, _ in first_only[:TOP] if p != "pkg/sub/m2.py"]]
    assert deep_first[TOP:] == first_only[TOP:]


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
    assert set(HEAD_WEIGHTS) == set(HEAD_FEATURES)
    assert HEAD_WEIGHTS["test"] < 0 < HEAD_WEIGHTS["in_chunks"]


def test_rank_files_is_the_reordered_fusion_of_the_signals(repo: Path) -> None:
    index = RepoIndex(repo)
    index.update()
    text = "ShoppingCart.total_price ignores the discount from apply_discount"
    assert rank_files(index, text, limit=10) == order(signals(index, text), limit=10)


def test_only_the_lists_the_models_were_checked_with_count_as_agreeing() -> None:
    found = Signals({"chunks": ["pkg/a.py", "pkg/b.py"], "files": ["pkg/b.py", "pkg/a.py"]}, {})
    column = FEATURES.index("lists_agree")
    before = features(fuse(found), found, is_test_path)[:, column].tolist()
    added = Signals({**found.lists, "title": ["pkg/a.py"], "new_list": ["pkg/a.py"]}, {})
    # The new lists may move the fused order; each file's agreement stays what it was.
    agree = dict(zip([p for p, _ in fuse(added)],
                     features(fuse(added), added, is_test_path)[:, column].tolist(),
                     strict=True))
    assert before == [2.0, 2.0] and agree == {"pkg/a.py": 2.0, "pkg/b.py": 2.0}
    assert fuse(added)[0][0] == "pkg/a.py"
