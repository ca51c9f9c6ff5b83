"""The memory store, one suite for a real SQLite file and a real PostgreSQL database: who
sees what, and `forget` leaving no byte of a memory in the store's files (SQLite's file and
WAL; PostgreSQL's table, TOAST and index files), terms and vectors included."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from codeloop.memory.records import MemoryNotFound, NewMemory
from codeloop.memory.store import MemoryStore
from codeloop.memory.vectors import available
from tests.memory.backends import memory_backend, stored_bytes

SECRETISH = "zebracorn-quartz-vendored-wheelhouse"
# Opens the backend's store (again: a fresh process sees what this one left).
Opener = Callable[..., MemoryStore]


@pytest.fixture(params=["sqlite", "postgres"])
def opener(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Opener]:
    with memory_backend(request, tmp_path) as open_store:
        yield open_store


def _store(opener: Opener, use_vectors: bool = False) -> MemoryStore:
    return opener(use_vectors=use_vectors)


def _add(store: MemoryStore, user: str, text: str, scope: str = "repo",
         repo: str = "/r/one", **kw: object) -> str:
    memory = store.add(NewMemory(user=user, kind="fact", scope=scope,  # type: ignore[arg-type]
                                 text=text, source="cli", repo=repo, **kw))  # type: ignore[arg-type]
    assert memory is not None
    return memory.id


def test_recall_never_crosses_users_and_team_memories_stay_on_their_repo(
        opener: Opener) -> None:
    store = _store(opener)
    # One rare word in each, texts of one length: each visible memory scores the same.
    alice = _add(store, "alice", "flakyzeta note one")
    alice_user = _add(store, "alice", "flakyzeta note two", scope="user")
    team = _add(store, "alice", "flakyzeta note six", scope="team")
    bob = _add(store, "bob", "flakyzeta note ten")
    other_repo = _add(store, "bob", "flakyzeta note red", repo="/r/two")

    def seen(user: str, repo: str) -> set[str]:
        return {h.memory.id for h in store.recall(user, repo, "flakyzeta", 10)}

    assert seen("alice", "/r/one") == {alice, alice_user, team}
    assert seen("bob", "/r/one") == {bob, team}
    assert seen("bob", "/r/two") == {other_repo}
    assert seen("carol", "/r/one") == {team}
    assert seen("carol", "/r/two") == set()
    with pytest.raises(MemoryNotFound):
        store.get(alice, "bob")
    assert store.get(team, "bob").user == "alice"  # a team memory: any user, that repository
    assert store.forget([alice], "bob") == []  # not bob's to delete
    assert store.get(alice, "alice").id == alice
    assert {m.id for m in store.listing("bob", "/r/one")} == {bob, team}


@pytest.mark.parametrize("use_vectors", [False, *([True] if available() else [])])
def test_forget_removes_it_from_recall_and_from_the_file(opener: Opener,
                                                         use_vectors: bool) -> None:
    store = _store(opener, use_vectors)
    keep = _add(store, "alice", "the cache is rebuilt nightly")
    gone = _add(store, "alice", f"vendored packages live in {SECRETISH}")
    assert {h.memory.id for h in store.recall("alice", "/r/one", SECRETISH, 5)} == {gone}
    assert SECRETISH.encode() in stored_bytes(store)
    # The FTS terms hold the parts of the word too: each must go.
    parts = [p.encode() for p in ("zebracorn", "quartz")]
    assert all(p in stored_bytes(store) for p in parts)

    assert store.forget([gone], "alice") == [gone]

    assert gone not in {h.memory.id for h in store.recall("alice", "/r/one", SECRETISH, 5)}
    with pytest.raises(MemoryNotFound):
        store.get(gone, "alice")
    on_disk = stored_bytes(store)
    assert SECRETISH.encode() not in on_disk
    assert not [p for p in parts if p in on_disk], "terms of a forgotten memory remain"
    assert store.get(keep, "alice").text == "the cache is rebuilt nightly"
    # ...and a fresh process sees the same.
    again = opener(use_vectors=use_vectors)
    assert [m.id for m in again.listing("alice")] == [keep]


def test_an_expired_memory_is_not_recalled_and_is_deleted_on_open(opener: Opener) -> None:
    store = _store(opener)
    short = _add(store, "alice", f"temporary note about {SECRETISH}", ttl_s=0.2)
    assert store.recall("alice", "/r/one", SECRETISH, 5)
    time.sleep(0.3)
    assert store.recall("alice", "/r/one", SECRETISH, 5) == []
    assert short not in {m.id for m in store.listing("alice")}
    again = opener(use_vectors=False)
    assert SECRETISH.encode() not in stored_bytes(again)


def test_query_text_is_never_fts_syntax(opener: Opener) -> None:
    store = _store(opener)
    mid = _add(store, "alice", "the NEAR operator of the search")
    for query in ('NEAR("a" "b")', "*", 'a" OR "', "terms:x", "^-(", ""):
        store.recall("alice", "/r/one", query, 3)  # no sqlite3.OperationalError
    assert [h.memory.id for h in store.recall("alice", "/r/one", "NEAR operator", 3)] == [mid]
