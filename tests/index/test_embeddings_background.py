"""`search_code` with embeddings on never waits for a repository's embedding: it answers from
the words while a background thread embeds (minutes on a large repository), and the index
stays usable meanwhile. Real model (tokenlearn-static-model) and real index."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray

from codeloop.context.retrieval import build_task_context
from codeloop.index import embeddings
from codeloop.index.code_search import search_code
from codeloop.index.service import RepoIndex

pytestmark = pytest.mark.skipif(
    not embeddings.available(),
    reason="the `embeddings` extra (model2vec, tokenlearn-static-model) is not installed")


def test_search_answers_at_once_while_the_repository_is_embedded(
        repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(embeddings.ENV_VAR, "1")
    # At its usual nice value the thread would wait behind the suite's other workers.
    monkeypatch.setattr(embeddings, "_BACKGROUND_NICE", 0)
    embedding, release = threading.Event(), threading.Event()
    real_encode = embeddings.encode

    # The repository's chunks are held until the test lets them go, standing for the
    # minutes a large repository takes; a query (one text) is encoded as it comes.
    def held(texts: list[str]) -> NDArray[np.float32]:
        if len(texts) > 1:
            embedding.set()
            assert release.wait(20), "the test never let the embedding go on"
        return real_encode(texts)

    monkeypatch.setattr(embeddings, "encode", held)
    index = RepoIndex(repo)
    index.update()
    answer = search_code(index, "apply a discount to the price")
    assert "shop/pricing.py" in {r.path for r in answer.results}
    assert answer.semantic_pending and not answer.semantic
    assert "still being computed" in answer.tried()
    assert embedding.wait(20)

    # The index is not locked by the embedding: an edit is indexed and searched meanwhile.
    done = threading.Event()

    def edit_and_search() -> None:
        (repo / "shop" / "refund.py").write_text(
            "def refund_order(order):\n    \"\"\"Give the money back.\"\"\"\n"
            "    return order.total\n")
        index.update()
        if index.search("refund money back", 5):
            done.set()

    worker = threading.Thread(target=edit_and_search)
    worker.start()
    assert done.wait(20), "the index was held while the repository was embedded"
    worker.join()

    release.set()
    assert embeddings.wait_until_built(index, 60)
    later = search_code(index, "apply a discount to the price")
    assert later.semantic and not later.semantic_pending
    # The edit came after that build began: a second build embeds it in the background.
    assert embeddings.wait_until_built(index, 60)
    ranked = embeddings.rank_files_semantic_ready(index, "give the money back", 10)
    assert ranked is not None and "shop/refund.py" in {p for p, _ in ranked}
    index.close()


def test_a_closed_index_stops_the_background_embedding_quietly(
        repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(embeddings.ENV_VAR, "1")
    monkeypatch.setattr(embeddings, "_BACKGROUND_NICE", 0)
    index = RepoIndex(repo)
    index.update()
    index.close()  # the session ended before its first search was embedded
    assert embeddings.rank_files_semantic_ready(index, "apply a discount", 5) is None
    assert embeddings.wait_until_built(index, 30)


def test_a_task_context_asked_to_fuse_embeddings_never_waits_for_them(
        repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The task context waited for the model and the whole repository's embedding: minutes
    # on a large one, on the session's own thread for a per-turn refresh.
    monkeypatch.setenv(embeddings.ENV_VAR, "1")
    monkeypatch.setattr(embeddings, "_BACKGROUND_NICE", 0)
    release = threading.Event()
    real_encode = embeddings.encode

    def held(texts: list[str]) -> NDArray[np.float32]:
        if len(texts) > 1:
            release.wait(30)
        return real_encode(texts)

    monkeypatch.setattr(embeddings, "encode", held)
    index = RepoIndex(repo)
    index.update()
    built: list[bool] = []
    builder = threading.Thread(target=lambda: built.append(build_task_context(
        index, "apply a discount to the price", 2_000, semantic=True).semantic))
    builder.start()
    builder.join(10)
    finished = not builder.is_alive()
    release.set()
    builder.join()
    assert finished, "the context waited for the repository's embedding"
    assert built == [False]  # built from the words meanwhile
    assert embeddings.wait_until_built(index, 60)
    later = build_task_context(index, "apply a discount to the price", 2_000, semantic=True)
    assert later.semantic and later.ranked_files
    index.close()
