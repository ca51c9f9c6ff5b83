"""A broken embeddings install (the extra present, its model files gone) costs one failed
load, not one per search or plan step: search, the task context and memory recall go on by
words and say why, and the load is tried again only after `RETRY_LOAD_AFTER_S`. The real
model2vec fails on a real, empty model directory."""

from __future__ import annotations

import time
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any

import pytest

from codeloop.index import embeddings
from codeloop.index.code_search import search_code
from codeloop.index.service import RepoIndex
from codeloop.memory.records import NewMemory
from codeloop.memory.store import SQLiteMemoryStore

pytestmark = pytest.mark.skipif(
    not embeddings.available(),
    reason="the `embeddings` extra (model2vec, tokenlearn-static-model) is not installed")


@pytest.fixture
def loads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[float]]:
    """The bundled model's directory emptied (as a half-removed install leaves it); yields
    the times `load_model` ran. The real loader runs, only counted."""
    import static_model  # type: ignore[import-untyped, import-not-found, unused-ignore]
    (tmp_path / "wheel" / "model").mkdir(parents=True)
    monkeypatch.setattr(static_model, "__file__", str(tmp_path / "wheel" / "__init__.py"))
    monkeypatch.setenv(embeddings.ENV_VAR, "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(embeddings, "_BACKGROUND_NICE", 0)
    monkeypatch.setattr(embeddings, "_load_failed", None)
    calls: list[float] = []
    real = embeddings.load_model.__wrapped__

    @lru_cache(maxsize=1)
    def counted() -> Any:
        calls.append(time.monotonic())
        return real()
    monkeypatch.setattr(embeddings, "load_model", counted)
    yield calls
    embeddings.load_model.cache_clear()


def _wait_for_failure() -> str:
    deadline = time.monotonic() + 60
    while (reason := embeddings.load_failed()) is None:
        assert time.monotonic() < deadline, "the background load never ended"
        time.sleep(0.02)
    return reason


def test_a_model_that_cannot_load_is_tried_once_not_at_every_call(loads: list[float]) -> None:
    assert embeddings.model_ready() is False
    assert "Could not find expected model files" in _wait_for_failure()
    for _ in range(20):
        assert embeddings.model_ready() is False
    with pytest.raises(embeddings.EmbeddingsUnavailable) as info:
        embeddings.encode(["a query"])
    assert "could not be loaded" in info.value.message and "force-reinstall" in info.value.hint
    assert len(loads) == 1


def test_the_load_is_tried_again_after_a_while(loads: list[float],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    embeddings.model_ready()
    _wait_for_failure()
    monkeypatch.setattr(embeddings, "RETRY_LOAD_AFTER_S", 0.0)
    with pytest.raises(embeddings.EmbeddingsUnavailable):
        embeddings.encode(["a query"])
    assert len(loads) == 2


def test_search_answers_by_words_and_says_the_model_would_not_load(
        loads: list[float], repo: Path) -> None:
    index = RepoIndex(repo)
    index.update()
    first = search_code(index, "apply a discount to the price")
    assert "shop/pricing.py" in {r.path for r in first.results}
    embeddings.wait_until_built(index, 60)  # the first search's background embedding ends
    again = search_code(index, "apply a discount to the price")
    assert "shop/pricing.py" in {r.path for r in again.results}
    assert again.semantic_broken and not again.semantic and not again.semantic_pending
    assert "the embedding model could not be loaded" in again.tried()
    for _ in range(10):
        search_code(index, "shopping cart total")
    assert len(loads) == 1


def test_memory_recall_goes_on_by_words(loads: list[float], tmp_path: Path) -> None:
    store = SQLiteMemoryStore(tmp_path / "memory.sqlite", use_vectors=True)
    store.add(NewMemory(user="u", kind="fact", scope="repo", source="cli", repo="r",
                        text="the shop's tests run with tox -e py311"))
    _wait_for_failure()  # `add` started the load in the background rather than wait for it
    hits = store.recall("u", "r", "how do the tests run with tox", 3)
    assert [h.memory.text for h in hits] == ["the shop's tests run with tox -e py311"]
    assert len(loads) == 1
