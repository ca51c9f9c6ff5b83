"""Helpers for tenant tests: a live server with a priced scripted model, and HTTP clients
bound to a token (real HTTP on 127.0.0.1 through httpx)."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from codeloop.config import Settings
from codeloop.llm.factory import make_model
from codeloop.llm.types import Completion, DeltaCallback, Model, ModelRequest
from codeloop.server.auth import TokenStore
from tests.server.conftest import DEFAULTS
from tests.server.live import live_server

# Dollars per token the priced model charges: a scripted session costs a few cents.
PER_TOKEN_USD = 1e-5


def priced(inner: Callable[[str, Settings], Model] = make_model
           ) -> Callable[[str, Settings], Model]:
    """A model factory whose completions cost PER_TOKEN_USD per token, as a paid model's do."""

    class Priced:
        def __init__(self, model: Model) -> None:
            self.inner = model
            self.name = model.name

        def complete(self, request: ModelRequest,
                     on_delta: DeltaCallback | None = None) -> Completion:
            done = self.inner.complete(request, on_delta)
            tokens = done.usage.input_tokens + done.usage.output_tokens
            return dataclasses.replace(done, cost_usd=tokens * PER_TOKEN_USD)

    return lambda spec, settings: Priced(inner(spec, settings))


class Client:
    """One user's view of the server: a token and a base URL."""

    def __init__(self, base: str, token: str) -> None:
        self.http = httpx.Client(base_url=base, timeout=30,
                                 headers={"Authorization": f"Bearer {token}"})
        self.token = token

    def request(self, method: str, url: str, **kw: Any) -> httpx.Response:
        return self.http.request(method, url, **kw)

    def ok(self, method: str, url: str, **kw: Any) -> Any:
        response = self.request(method, url, **kw)
        assert response.status_code < 300, (response.status_code, response.text)
        return response.json()

    def refused(self, method: str, url: str, status: int, *needles: str, **kw: Any
                ) -> httpx.Response:
        """Assert the request is refused with `status` and a message naming each needle."""
        response = self.request(method, url, **kw)
        assert response.status_code == status, (response.status_code, response.text)
        for needle in needles:
            assert needle in response.json()["detail"], (needle, response.text)
        return response

    def create(self, repo: Path, script: Path, **body: Any) -> httpx.Response:
        data = {"task": "make the tests pass", "repo": str(repo),
                "model": f"scripted:{script}", **body}
        return self.request("POST", "/sessions", json=data)

    def start(self, repo: Path, script: Path, **body: Any) -> str:
        response = self.create(repo, script, **body)
        assert response.status_code == 201, response.text
        return str(response.json()["id"])

    def wait(self, sid: str, *statuses: str, timeout: float = 60) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            detail: dict[str, Any] = self.ok("GET", f"/sessions/{sid}")
            if detail["status"] in statuses and not detail["active"]:
                return detail
            assert time.monotonic() < deadline, f"session never got to {statuses}: {detail}"
            time.sleep(0.05)


@contextmanager
def tenant_server(data_dir: Path, roots: list[Path], **app_kw: Any) -> Iterator[
        tuple[str, Client]]:
    """A live server (priced scripted model unless a factory is given); yields its base URL
    and the operator's client."""
    app_kw.setdefault("defaults", DEFAULTS)
    app_kw.setdefault("model_factory", priced())
    with live_server(data_dir, allowed_roots=roots, **app_kw) as base:
        operator = Client(base, TokenStore(data_dir).admin_token)
        yield base, operator


def add_user(base: str, operator: Client, tenant: str, user: str, role: str) -> Client:
    """Put the user in the tenant (made if missing) through the API; their client."""
    if tenant not in [t["name"] for t in operator.ok("GET", "/tenants")]:
        operator.ok("POST", "/tenants", json={"name": tenant})
    operator.ok("PUT", f"/tenants/{tenant}/users/{user}", json={"role": role})
    made = operator.ok("POST", f"/tenants/{tenant}/users/{user}/tokens")
    return Client(base, made["token"])
