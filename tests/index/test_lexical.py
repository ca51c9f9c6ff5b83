"""The streamed base index scores exactly as bm25s's own index of the same documents."""

from __future__ import annotations

import json
from pathlib import Path

import bm25s
import numpy as np
import pytest

from codeloop.index.lexical import K1, B, LexicalIndex
from codeloop.index.terms import terms

SOURCES = [
    "def apply_discount(amount, percent=0):\n    return amount * (1 - percent / 100)\n",
    "class ShoppingCart:\n    def add_item(self, item, quantity=1):\n        self.items.append(item)\n",
    "def total_price(cart):\n    return apply_discount(sum(i.price for i in cart.items))\n",
    "VAT_RATE = 0.2\n\ndef price_with_vat(amount):\n    return amount * (1 + VAT_RATE)\n",
    "",  # an empty document still counts in the statistics
    "def parse_http_response(raw):\n    status, _, body = raw.partition(' ')\n    return body\n",
]
QUERIES = ["apply discount to the cart total", "vat rate price price price", "http body",
           "nothing matches here"]


def corpus() -> list[tuple[str, list[str]]]:
    return [(f"doc{i}", terms(text)) for i, text in enumerate(SOURCES)]


def reference_scores(query: list[str]) -> np.ndarray:
    model = bm25s.BM25(k1=K1, b=B)
    model.index([toks for _, toks in corpus()], show_progress=False)
    known = [t for t in query if t in model.vocab_dict]
    return np.asarray(model.get_scores(known)) if known else np.zeros(len(SOURCES))


def test_scores_match_bm25s_index_and_survive_save_and_load(tmp_path: Path) -> None:
    index = LexicalIndex()
    index.build(corpus())
    index.save(tmp_path / "lex")
    loaded = LexicalIndex.load(tmp_path / "lex")
    assert loaded is not None
    for text in QUERIES:
        query = terms(text)
        expected = reference_scores(query)
        for candidate in (index, loaded):
            hits = dict(candidate.search(query, len(SOURCES)))
            got = np.array([hits.get(f"doc{i}", 0.0) for i in range(len(SOURCES))])
            assert np.allclose(got, expected, rtol=1e-5, atol=1e-6), text
    assert index.search(terms("nothing matches here"), 5) == []
    assert index.search(terms("apply discount"), 2)[0][0] == "doc0"


def test_empty_build_has_no_hits() -> None:
    index = LexicalIndex()
    index.build([])
    assert len(index) == 0
    assert index.search(["anything"], 3) == []


def test_a_document_scores_alike_in_the_base_and_in_the_overlay() -> None:
    index = LexicalIndex()
    index.build(corpus())
    query = terms("apply discount to the cart total")
    before = dict(index.search(query, len(SOURCES)))
    index.add("doc0", terms(SOURCES[0]))  # re-indexed unchanged: it now lives in the overlay
    after = dict(index.search(query, len(SOURCES)))
    assert after == pytest.approx(before, rel=1e-5)


def test_removing_base_documents_updates_the_statistics_like_a_rebuild() -> None:
    index = LexicalIndex()
    index.build(corpus())
    index.remove("doc2")  # the other document that says "apply discount"
    index.add("doc0", terms(SOURCES[0]))
    fresh = LexicalIndex()
    fresh.build([doc for doc in corpus() if doc[0] != "doc2"])
    query = terms("apply discount")
    assert dict(index.search(query, 9)) == pytest.approx(dict(fresh.search(query, 9)), rel=1e-5)


def test_removing_many_documents_at_once_is_removing_them_one_by_one() -> None:
    one_by_one, at_once = LexicalIndex(), LexicalIndex()
    for index in (one_by_one, at_once):
        index.build(corpus())
        index.add("doc3", terms(SOURCES[3]))  # in the overlay (its base row masked)
    for key in ["doc2", "doc3", "doc5", "doc5", "missing"]:
        one_by_one.remove(key)
    at_once.remove_many(["doc2", "doc3", "doc5", "doc5", "missing"])
    assert len(at_once) == len(one_by_one) == len(SOURCES) - 3
    for query in QUERIES:
        assert at_once.search(terms(query), 9) == one_by_one.search(terms(query), 9)
    # And the statistics are those of a rebuild without them, as for one removal.
    at_once.add("doc0", terms(SOURCES[0]))
    fresh = LexicalIndex()
    fresh.build([doc for doc in corpus() if doc[0] not in {"doc2", "doc3", "doc5"}])
    query = terms("apply discount")
    assert dict(at_once.search(query, 9)) == pytest.approx(dict(fresh.search(query, 9)),
                                                           rel=1e-5)


def test_a_loaded_index_derives_its_frequencies_only_when_a_document_changes(
        tmp_path: Path) -> None:
    # The frequencies are not saved (parsing them was most of a warm open): a search of the
    # loaded index does without them, and the first change derives them from the matrix.
    kept = LexicalIndex()
    kept.build(corpus())
    kept.save(tmp_path / "lex")
    assert "df" not in json.loads((tmp_path / "lex" / "lexical.json").read_text())
    loaded = LexicalIndex.load(tmp_path / "lex")
    assert loaded is not None
    query = terms("apply discount to the cart total")
    assert loaded.search(query, 9) == kept.search(query, 9)
    assert loaded.frequencies_derived == 0
    assert loaded._base_pos is None  # the key -> position map is only made for a change
    for index in (kept, loaded):
        index.remove_many(["doc2", "doc4"])
        index.add("doc0", terms(SOURCES[0]))
        index.add("doc9", terms("def cart_total(cart): return apply_discount(cart)"))
    assert loaded.frequencies_derived == 1
    assert len(loaded) == len(kept)
    for text in QUERIES:
        query = terms(text)
        assert dict(loaded.search(query, 9)) == pytest.approx(dict(kept.search(query, 9)),
                                                              rel=1e-6)


def test_an_index_saved_with_its_frequencies_still_loads(tmp_path: Path) -> None:
    # The layout before the frequencies were left out: lengths by key, and the frequencies.
    index = LexicalIndex()
    index.build(corpus())
    index.save(tmp_path / "lex")
    meta = json.loads((tmp_path / "lex" / "lexical.json").read_text())
    lens = dict(zip(meta["keys"], meta.pop("lengths"), strict=True))
    (tmp_path / "lex" / "lexical.json").write_text(json.dumps({**meta, "lens": lens,
                                                               "df": {"apply": 2}}))
    loaded = LexicalIndex.load(tmp_path / "lex")
    assert loaded is not None
    loaded.add("doc0", terms(SOURCES[0]))
    index.add("doc0", terms(SOURCES[0]))
    query = terms("apply discount")
    assert dict(loaded.search(query, 9)) == pytest.approx(dict(index.search(query, 9)), rel=1e-6)
