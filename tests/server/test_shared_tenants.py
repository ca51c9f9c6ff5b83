"""Two server processes on one PostgreSQL database share tenants, users, tokens, the audit
log and request rates: a token made through one authenticates on the other, and a tenant's
requests per minute count across both. One server runs in this process, the other is a real
`codeloop serve` process."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from codeloop.server.auth import TokenStore
from tests.server.tenancy import Client, add_user, tenant_server

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def serve_process(data: Path, root: Path, url: str) -> Iterator[str]:
    """`codeloop serve` in its own process on the database at `url`; yields its base URL."""
    port = _free_port()
    env = {**os.environ, "CODELOOP_DATABASE_URL": url,
           "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    proc = subprocess.Popen(
        [sys.executable, "-m", "codeloop", "serve", "--port", str(port), "--data-dir",
         str(data), "--allow-root", str(root)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, f"serve exited: {proc.stdout.read() if proc.stdout else ''}"
            try:
                if httpx.get(f"{base}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "serve did not start"
            time.sleep(0.1)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_a_token_made_on_one_server_works_on_the_other_and_rates_count_across_both(
        tmp_path: Path, pg_url: str) -> None:
    data_a, data_b = tmp_path / "a", tmp_path / "b"
    with tenant_server(data_a, [tmp_path], database_url=pg_url) as (base_a, operator_a), \
            serve_process(data_b, tmp_path, pg_url) as base_b:
        alice_a = add_user(base_a, operator_a, "acme", "alice", "member")
        alice_b = Client(base_b, alice_a.token)
        assert alice_b.ok("GET", "/whoami") == {"user": "alice", "tenant": "acme",
                                                "role": "member"}
        # The other server's operator sees the tenant and the audit of what A's operator did.
        operator_b = Client(base_b, TokenStore(data_b).admin_token)
        assert "acme" in [t["name"] for t in operator_b.ok("GET", "/tenants")]
        actions = [e["event"]["action"] for e in operator_b.ok("GET", "/audit")
                   if e["type"] == "admin_action"]
        assert {"tenant.create", "user.set", "token.create"} <= set(actions)

        # A limit set through B holds on A; the requests of both count against it.
        operator_b.ok("PATCH", "/tenants/acme/policy", json={"requests_per_minute": 3})
        alice_a.ok("GET", "/whoami")
        alice_b.ok("GET", "/whoami")
        alice_a.ok("GET", "/whoami")
        alice_b.refused("GET", "/whoami", 429, "requests_per_minute: 3")
        alice_a.refused("GET", "/whoami", 429, "requests_per_minute: 3")

        # A token revoked through B no longer opens A.
        operator_b.ok("PATCH", "/tenants/acme/policy", json={"requests_per_minute": None})
        [user] = [u for u in operator_a.ok("GET", "/tenants/acme")["users"]
                  if u["user"] == "alice"]
        [fingerprint] = user["tokens"]
        operator_b.ok("DELETE", f"/tokens/{fingerprint}")
        assert alice_a.request("GET", "/whoami").status_code == 401
