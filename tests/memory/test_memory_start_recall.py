"""The memories a new session starts with are recalled without loading the embedding model
(seconds of CPU before the first model call); once a process has loaded it, they are
recalled by words and vectors together."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from codeloop.config import Settings
from codeloop.events import SessionStarted
from codeloop.index import embeddings
from codeloop.memory.store import open_memory
from codeloop.session.memory_admin import open_admin
from codeloop.session.memory_recall import MEMORY_HEADER
from codeloop.session.setup import open_store, session_redactor, start_session
from codeloop.session.store import EventStore
from tests.session.helpers import make_repo

pytestmark = pytest.mark.skipif(
    not embeddings.available(),
    reason="CANNOT EXERCISE: the embeddings extra (model2vec) is not installed")

FACT = "the calculator's tests run with tox -e py311, never bare pytest"
TASK = "make the calculator tests pass under tox"


def _prompt(store: EventStore, sid: str) -> str:
    return next(e.event.system_prompt for e in store.read(sid)
                if isinstance(e.event, SessionStarted))


def _vectors_stored(data: Path) -> int:
    with sqlite3.connect(data / "memory.sqlite") as conn:
        return int(conn.execute("SELECT count(*) FROM memory_vectors").fetchone()[0])


def test_a_session_starts_with_its_memories_without_loading_the_model(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = make_repo(tmp_path)
    data = tmp_path / "data"
    settings = Settings(verify_on_finish=False)
    store = open_store(data)
    # Stored while embeddings are off: the store fills the vector in at its first semantic
    # recall, which shows whether a recall used vectors.
    monkeypatch.setenv(embeddings.ENV_VAR, "0")
    open_admin(data, "local", session_redactor(settings)).add(FACT, repo=repo)
    monkeypatch.setenv(embeddings.ENV_VAR, "1")
    open_memory.cache_clear()  # a store opened now embeds, as a process started now would
    embeddings.load_model.cache_clear()

    sid = start_session(store, TASK, repo, settings, "scripted")
    prompt = _prompt(store, sid)
    assert MEMORY_HEADER in prompt and "tox -e py311" in prompt
    assert not embeddings.model_loaded()
    assert _vectors_stored(data) == 0

    embeddings.load_model()  # as a server's later sessions find it
    sid = start_session(store, TASK, repo, settings, "scripted")
    assert "tox -e py311" in _prompt(store, sid)
    assert _vectors_stored(data) == 1
