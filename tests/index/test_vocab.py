"""The saved, sorted vocabulary maps terms to the columns bm25s gave them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from codeloop.index.lexical import LexicalIndex
from codeloop.index.service import RepoIndex
from codeloop.index.terms import terms
from codeloop.index.vocab import (
    HEADS_FILE,
    OFFSETS_FILE,
    TERMS_FILE,
    SortedVocab,
    save_vocab,
)

VOCAB = {"zeta": 0, "alpha": 1, "ünïcode": 2, "a": 3, "alphabet": 4, "mid\udcff": 5, "": 6,
         # Many terms sharing their first eight bytes (and one that is just those bytes).
         **{f"test_matrix_{n}": 7 + n for n in range(40)}, "test_mat": 99, "test_matr": 100}


def test_lookups_find_every_term_and_only_those(tmp_path: Path) -> None:
    save_vocab(tmp_path, VOCAB)
    vocab = SortedVocab.load(tmp_path)
    assert vocab is not None
    assert len(vocab) == len(VOCAB)
    for term, column in VOCAB.items():
        assert vocab[term] == column
        assert term in vocab
    assert vocab.lookup_many(["test_matrix_17", "test_matrix_", "test_ma", "alpha", "test_mat"]
                             ) == [24, None, None, 1, 99]
    for absent in ("alph", "alphabets", "zz", "b", "unicode", "test_matrix_40", "test_matrix",
                   3):
        assert absent not in vocab
        assert not isinstance(absent, str) or vocab.get(absent) is None
    assert dict(vocab.items()) == VOCAB
    assert sorted(vocab) == sorted(VOCAB)


def test_a_vocabulary_that_does_not_add_up_reads_as_none(tmp_path: Path) -> None:
    save_vocab(tmp_path, VOCAB)
    np.save(tmp_path / OFFSETS_FILE, np.array([0, 3, 2], dtype=np.int64))
    assert SortedVocab.load(tmp_path) is None
    save_vocab(tmp_path, VOCAB)
    np.save(tmp_path / TERMS_FILE, np.array([1.5]))
    assert SortedVocab.load(tmp_path) is None
    save_vocab(tmp_path, VOCAB)
    np.save(tmp_path / HEADS_FILE, np.zeros(3, dtype=np.uint64))
    assert SortedVocab.load(tmp_path) is None
    assert SortedVocab.load(tmp_path / "missing") is None


DOCS = [("a", terms("def apply_discount(amount): return amount")),
        ("b", terms("class ShoppingCart: items = []")),
        ("c", terms("def total(cart): return apply_discount(sum(cart.items))"))]


def test_a_loaded_index_looks_its_query_terms_up_in_the_saved_vocabulary(
        tmp_path: Path) -> None:
    built = LexicalIndex()
    built.build(DOCS)
    built.save(tmp_path / "lex")
    loaded = LexicalIndex.load(tmp_path / "lex")
    assert loaded is not None and loaded._base is not None
    vocab = loaded._base.vocab_dict
    assert isinstance(vocab, SortedVocab)  # not bm25s's JSON, parsed whole
    query = terms("apply discount to the cart items")
    assert loaded.search(query, 3) == built.search(query, 3)
    assert vocab.lookups == len(query)  # in one `lookup_many` with the scores
    # Removing a document walks the vocabulary by column: the same statistics as built.
    for index in (built, loaded):
        index.remove("c")
        index.add("d", terms("def cart_items(cart): return cart.items"))
    assert dict(loaded.search(query, 3)) == pytest.approx(dict(built.search(query, 3)), rel=1e-6)


def test_an_index_saved_without_the_sorted_vocabulary_still_loads(tmp_path: Path) -> None:
    built = LexicalIndex()
    built.build(DOCS)
    built.save(tmp_path / "lex")
    (tmp_path / "lex" / "bm25" / TERMS_FILE).unlink()
    loaded = LexicalIndex.load(tmp_path / "lex")
    assert loaded is not None and loaded._base is not None
    assert isinstance(loaded._base.vocab_dict, dict)
    query = terms("apply discount")
    assert loaded.search(query, 3) == built.search(query, 3)


def test_a_reopened_index_searches_the_saved_vocabulary_until_it_is_expanded(
        repo: Path, tmp_path: Path) -> None:
    first = RepoIndex(repo, tmp_path / "cache")
    first.update()
    expected = first.search("apply discount")
    first.close()
    index = RepoIndex(repo, tmp_path / "cache")
    chunks, files = index._terms.searchable()
    assert chunks._base is not None and files._base is not None
    assert isinstance(chunks._base.vocab_dict, SortedVocab)
    assert index.search("apply discount") == expected
    index.expand_vocabularies()  # as the session's index thread does after the first context
    assert type(chunks._base.vocab_dict) is dict and type(files._base.vocab_dict) is dict
    assert index.search("apply discount") == expected
    index.close()
