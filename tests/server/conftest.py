"""Shared set-up for server tests: a real repository, a script file, an app on a data dir."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from codeloop.config import Settings
from codeloop.llm.factory import make_model
from codeloop.llm.scripted import Turn
from codeloop.llm.types import Completion, DeltaCallback, Model, ModelRequest
from codeloop.server.app import create_app
from codeloop.server.auth import TokenStore
from tests.session.helpers import FIX_SCRIPT, make_repo

DEFAULTS = Settings(sandbox=True, approval_mode="full-auto")


def write_script(path: Path, turns: list[Turn] | None = None) -> Path:
    turns = FIX_SCRIPT if turns is None else turns
    path.write_text(json.dumps([{"text": t.text, "tool_calls": t.tool_calls} for t in turns]))
    return path


class Gate:
    """Holds every model call until released: lets a test act while a session is mid-run."""

    def __init__(self) -> None:
        self.open = threading.Event()
        self.waiting = threading.Semaphore(0)

    def factory(self) -> Callable[[str, Settings], Model]:
        gate = self

        class Gated:
            def __init__(self, inner: Model) -> None:
                self.inner = inner
                self.name = inner.name

            def complete(self, request: ModelRequest,
                         on_delta: DeltaCallback | None = None) -> Completion:
                gate.waiting.release()
                gate.open.wait(timeout=30)
                return self.inner.complete(request, on_delta)

        return lambda spec, settings: Gated(make_model(spec, settings))

    def close(self) -> None:
        """Hold model calls again, forgetting calls seen so far."""
        self.open.clear()
        self.waiting = threading.Semaphore(0)

    def wait_for_call(self) -> None:
        assert self.waiting.acquire(timeout=30), "no model call arrived"


class Api:
    """A TestClient bound to one user's token."""

    def __init__(self, client: TestClient, token: str) -> None:
        self.client = client
        self.headers = {"Authorization": f"Bearer {token}"}
        self.token = token

    def get(self, url: str, **kw: Any) -> Any:
        return self.client.get(url, headers=self.headers, **kw)

    def post(self, url: str, **kw: Any) -> Any:
        return self.client.post(url, headers=self.headers, **kw)

    def ok(self, method: str, url: str, **kw: Any) -> Any:
        response = getattr(self, method)(url, **kw)
        assert response.status_code < 300, response.text
        return response.json()

    def create(self, repo: Path, script: Path, **body: Any) -> str:
        data = {"task": "make the tests pass", "repo": str(repo), "model": f"scripted:{script}",
                **body}
        return str(self.ok("post", "/sessions", json=data)["id"])

    def wait(self, sid: str, pred: Callable[[dict[str, Any]], bool],
             timeout: float = 30) -> dict[str, Any]:
        """Poll the session until `pred` holds (the deadline only guards against a hang)."""
        deadline = time.monotonic() + timeout
        while True:
            detail: dict[str, Any] = self.ok("get", f"/sessions/{sid}")
            if pred(detail):
                return detail
            if time.monotonic() > deadline:
                raise AssertionError(f"session never reached the state; last: {detail}")
            time.sleep(0.02)

    def wait_status(self, sid: str, *statuses: str) -> dict[str, Any]:
        return self.wait(sid, lambda d: d["status"] in statuses and not d["active"])

    def events(self, sid: str, after: int = 0) -> list[dict[str, Any]]:
        return list(self.ok("get", f"/sessions/{sid}/events", params={"after": after}))


@pytest.fixture(params=["sqlite", "postgres"])
def tenant_backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
                   ) -> Iterator[str]:
    """Run the test's servers and commands on SQLite files in the data directory, or with
    CODELOOP_DATABASE_URL on a fresh PostgreSQL database (events, memory and tenants)."""
    if request.param == "sqlite":
        yield request.param
        return
    from codeloop.memory.store_pg import forget_open_memories

    monkeypatch.setenv("CODELOOP_DATABASE_URL", request.getfixturevalue("pg_url"))
    yield request.param
    forget_open_memories()  # before the database is dropped


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path)


@pytest.fixture
def script(tmp_path: Path) -> Path:
    return write_script(tmp_path / "script.json")


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def serve(data_dir: Path, tmp_path: Path) -> Iterator[Callable[..., Api]]:
    """Start an app on the data dir (as the admin), allowed to open repositories under
    tmp_path; every started app is shut at the end."""
    clients: list[TestClient] = []

    def start(**kw: Any) -> Api:
        kw.setdefault("defaults", DEFAULTS)
        kw.setdefault("allowed_roots", [tmp_path])
        app = create_app(data_dir, **kw)
        client = TestClient(app)
        client.__enter__()
        clients.append(client)
        return Api(client, TokenStore(data_dir).admin_token)

    yield start
    for client in reversed(clients):
        client.__exit__(None, None, None)
