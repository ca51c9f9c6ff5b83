"""One person, one set of memories: the command line's (`local`) and the server admin's are
the same on one data directory, rows the admin stored before are moved over, and every other
server user stays apart."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from codeloop.memory.records import NewMemory
from codeloop.memory.store import MemoryStore, memory_path, open_memory
from codeloop.server.auth import TokenStore
from tests.cli.test_cli import cli
from tests.memory.backends import memory_backend
from tests.memory.test_memory_cli import CONVENTION, _json
from tests.server.conftest import DEFAULTS, write_script
from tests.server.live import live_server
from tests.session.helpers import make_repo

FROM_THE_PAGE = "calc.add must stay a pure function"


def _done(detail: dict[str, Any]) -> bool:
    return detail["status"] == "finished" and not detail["active"]


class Http:
    """One token's calls to the real server."""

    def __init__(self, base: str, token: str) -> None:
        self.client = httpx.Client(base_url=base, timeout=30,
                                   headers={"Authorization": f"Bearer {token}"})

    def ok(self, method: str, url: str, **kw: Any) -> Any:
        response = self.client.request(method, url, **kw)
        assert response.status_code < 300, response.text
        return response.json()


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Callable[[str], Http]]:
    """`codeloop serve`'s app on 127.0.0.1 over the command line's data directory; yields a
    client maker for a user ("admin": the server-token holder)."""
    data = tmp_path / "data"
    open_memory.cache_clear()  # the server opens the store as a new process would
    with live_server(data, defaults=DEFAULTS, allowed_roots=[tmp_path]) as base:
        tokens = TokenStore(data)

        def as_user(user: str) -> Http:
            return Http(base, tokens.admin_token if user == "admin" else tokens.create(user))
        yield as_user
    open_memory.cache_clear()


def test_the_command_line_and_the_servers_admin_see_the_same_memories(
        tmp_path: Path, server: Callable[[str], Http]) -> None:
    repo = make_repo(tmp_path)
    added = _json(tmp_path, "memory", "add", CONVENTION, "--repo", str(repo))
    admin, alice = server("admin"), server("alice")

    listed = admin.ok("GET", "/memories", params={"repo": str(repo)})
    assert [(m["id"], m["user"]) for m in listed] == [(added["id"], "local")]
    posted = admin.ok("POST", "/memories", json={"text": FROM_THE_PAGE, "repo": str(repo)})
    assert posted["user"] == "local"
    mine = _json(tmp_path, "memory", "list", "-C", str(repo))
    assert [m["id"] for m in mine] == [posted["id"], added["id"]]

    # Another user sees neither, and what they store stays theirs.
    assert alice.ok("GET", "/memories") == []
    theirs = alice.ok("POST", "/memories", json={"text": "alice likes tabs", "repo": str(repo)})
    assert theirs["user"] == "alice"
    assert theirs["id"] not in {m["id"] for m in _json(tmp_path, "memory", "list", "--all")}
    assert alice.client.get(f"/memories/{added['id']}").status_code == 404

    # A session the server runs for its admin recalls the command line's memory.
    sid = admin.ok("POST", "/sessions", json={
        "task": "make the tests pass: run calc tests with unittest", "repo": str(repo),
        "model": f"scripted:{write_script(tmp_path / 'script.json')}"})["id"]
    deadline = time.monotonic() + 60
    while not _done(admin.ok("GET", f"/sessions/{sid}")):
        assert time.monotonic() < deadline, "the session did not finish"
        time.sleep(0.05)
    used = admin.ok("GET", f"/sessions/{sid}/memories")
    assert added["id"] in {u["id"] for u in used if u["how"] == "task"}, used

    # What the session learnt (its episode) is the command line's too.
    episodes = [m for m in _json(tmp_path, "memory", "list", "--all")
                if m["session_id"] == sid]
    assert episodes and {(m["user"], m["kind"]) for m in episodes} == {("local", "episode")}

    # Forgotten on the command line: gone from the admin's view.
    assert cli(tmp_path, "memory", "forget", posted["id"], "--yes").returncode == 0
    assert posted["id"] not in {m["id"] for m in admin.ok("GET", "/memories")}


def _rows(data: Path) -> list[tuple[str, str]]:
    with sqlite3.connect(memory_path(data)) as conn:
        return sorted(conn.execute("SELECT user, text FROM memories").fetchall())


def test_memories_an_older_server_stored_for_its_admin_become_the_local_owners(
        tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    data = tmp_path / "data"
    # The store as the old code left it: the API stored the admin's under "admin".
    _json(tmp_path, "memory", "add", CONVENTION, "--repo", str(repo))
    old = open_memory(data)
    for text in (FROM_THE_PAGE, CONVENTION):  # the second said both ways: kept once
        assert old.add(NewMemory(user="admin", kind="fact", scope="repo", text=text,
                                 source="api", repo=str(repo.resolve()))) is not None
    assert old.add(NewMemory(user="bob", kind="fact", scope="user", text="bob's own",
                             source="api")) is not None
    open_memory.cache_clear()
    assert ("admin", FROM_THE_PAGE) in _rows(data)

    listed = _json(tmp_path, "memory", "list", "--all")
    assert sorted(m["text"] for m in listed) == sorted([CONVENTION, FROM_THE_PAGE])
    assert {m["user"] for m in listed} == {"local"}
    assert _rows(data) == sorted([("local", CONVENTION), ("local", FROM_THE_PAGE),
                                  ("bob", "bob's own")])


@pytest.fixture(params=["sqlite", "postgres"])
def opener(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[..., MemoryStore]]:
    with memory_backend(request, tmp_path) as open_store:
        yield open_store


def test_each_store_moves_the_admins_rows_when_it_opens(
        opener: Callable[..., MemoryStore]) -> None:
    first = opener()
    local = first.add(NewMemory(user="local", kind="fact", scope="repo", text=CONVENTION,
                                source="cli", repo="/r/calc"))
    moved = first.add(NewMemory(user="admin", kind="correction", scope="user",
                                text=FROM_THE_PAGE, source="api"))
    twin = first.add(NewMemory(user="admin", kind="fact", scope="repo", text=CONVENTION,
                               source="api", repo="/r/calc"))
    other = first.add(NewMemory(user="carol", kind="fact", scope="repo", text=CONVENTION,
                                source="api", repo="/r/calc"))
    assert local and moved and twin and other
    again = opener()
    assert {m.id for m in again.listing("local")} == {local.id, moved.id}
    assert again.get(moved.id, "local").user == "local"
    assert again.listing("admin") == []
    assert [m.id for m in again.listing("carol")] == [other.id]
    assert {h.memory.id for h in again.recall("local", "/r/calc", "calc tests unittest", 5)} \
        == {local.id}
