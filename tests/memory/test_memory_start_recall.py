"""The memories a new session starts with are recalled without loading the embedding model
(seconds of CPU before the first model call); once a process has loaded it, they are
recalled by words and vectors together."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from codeloop.config import Settings
from codeloop.events import SessionStarted
from codeloop.index import embeddings
from codeloop.memory.records import repo_identity
from codeloop.memory.store import open_memory
from codeloop.session.memory_admin import open_admin
from codeloop.session.memory_recall import MEMORY_HEADER
from codeloop.session.setup import open_store, session_redactor, start_session
from codeloop.session.store import EventStore
from tests.memory.test_memory_sessions import AUTO, RecordingModel, run_session
from tests.session.helpers import call, make_repo, turn

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


@pytest.fixture
def held_model_load(monkeypatch: pytest.MonkeyPatch) -> Iterator[threading.Event]:
    """The embedding model unloaded, with its background load held until the event is set
    (so 'did not wait for it' does not depend on how fast this machine loads it)."""
    monkeypatch.setenv(embeddings.ENV_VAR, "1")
    open_memory.cache_clear()
    embeddings.load_model.cache_clear()
    # At nice 10 the load can starve for minutes beside a loaded machine's other tests.
    monkeypatch.setattr(embeddings, "_BACKGROUND_NICE", 0)
    release = threading.Event()
    warm = embeddings._warm
    loaders: list[threading.Thread] = []

    def held() -> None:
        loaders.append(threading.current_thread())
        release.wait(60)
        warm()
    monkeypatch.setattr(embeddings, "_warm", held)
    yield release
    release.set()
    # Let the held loads end here, not inside a later test's patched loader.
    for loader in loaders:
        loader.join(60)


def test_a_plan_step_recalls_by_words_while_the_model_loads_in_the_background(
        tmp_path: Path, held_model_load: threading.Event) -> None:
    # A step's recall loaded the model in the session's thread: seconds between two model
    # calls. Now it recalls by words and the model loads meanwhile.
    repo = make_repo(tmp_path)
    admin = open_admin(tmp_path / "data", "local", session_redactor(AUTO))
    note = admin.add("the changelog entry goes in docs/CHANGES.rst under Unreleased",
                     repo=repo)
    plan = {"summary": "fix add", "steps": [{"id": "s1", "title": "write the changelog entry"}]}
    model = RecordingModel([turn(call("propose_plan", **plan)),
                            turn(call("update_plan", status={"s1": "in_progress"})),
                            turn(call("finish", summary="done"))])
    sid = run_session(tmp_path, repo, "fix the add function", model, AUTO)
    recalled = [e.event for e in open_store(tmp_path / "data").read(sid)
                if e.event.type == "memory_recalled"]
    assert [(e.trigger, e.ids) for e in recalled] == [("step", [note.id])]  # type: ignore[union-attr]
    assert not embeddings.model_loaded()
    held_model_load.set()
    deadline = time.monotonic() + 120
    while not embeddings.model_loaded():
        assert time.monotonic() < deadline, "the background load never finished"
        time.sleep(0.05)


def test_remember_does_not_wait_for_the_model_and_the_vector_follows(
        tmp_path: Path, held_model_load: threading.Event) -> None:
    repo = make_repo(tmp_path)
    data = tmp_path / "data"
    open_store(data)
    admin = open_admin(data, "local", session_redactor(AUTO))
    admin.add(FACT, repo=repo)
    assert not embeddings.model_loaded() and _vectors_stored(data) == 0
    held_model_load.set()
    store = open_memory(data)
    # The first recall by vectors fills in what was stored without one.
    assert store.recall("local", str(repo_identity(repo)), "how do the tests run", 3)
    assert embeddings.model_loaded() and _vectors_stored(data) == 1
