"""/metrics, /healthz and /readyz over real HTTP: a scrape after a scripted session shows its
steps and tokens; metrics need the admin's token; readiness follows the event store."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
from prometheus_client.parser import text_string_to_metric_families

from codeloop.config import Settings
from codeloop.server.auth import TokenStore
from tests.server.conftest import DEFAULTS, Api, write_script
from tests.server.live import live_server
from tests.session.helpers import TEST_CMD, call, turn


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def run_session(client: httpx.Client, repo: Path, script: Path) -> str:
    sid = client.post("/sessions", json={"task": "make the tests pass", "repo": str(repo),
                                         "model": f"scripted:{script}"}).json()["id"]
    deadline = time.monotonic() + 60
    while True:
        detail: dict[str, Any] = client.get(f"/sessions/{sid}").json()
        if detail["status"] == "finished" and not detail["active"]:
            return str(sid)
        assert time.monotonic() < deadline, detail
        time.sleep(0.05)


def test_a_scrape_after_a_session_shows_its_tokens(data_dir: Path, repo: Path,
                                                   script: Path, tmp_path: Path) -> None:
    tokens = TokenStore(data_dir)
    bob = tokens.create("bob")
    with live_server(data_dir, defaults=DEFAULTS, allowed_roots=[tmp_path]) as base, \
            httpx.Client(base_url=base, headers={"Authorization": f"Bearer {bob}"},
                         timeout=30) as client:
        sid = run_session(client, repo, script)
        events = client.get(f"/sessions/{sid}/events").json()
        admin = {"Authorization": f"Bearer {tokens.admin_token}"}
        response = httpx.get(f"{base}/metrics", headers=admin)
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/plain")
        assert httpx.get(f"{base}/metrics").status_code == 401
        assert client.get("/metrics").status_code == 403  # bob's token, not the admin's
    got = samples(response.text)
    calls = [e["event"] for e in events if e["type"] == "model_call_finished"]
    out_tokens = sum(c["usage"]["output_tokens"] for c in calls)
    in_tokens = sum(c["usage"]["input_tokens"] for c in calls)
    assert out_tokens > 0
    model = calls[0]["model"]
    who = (("model", model), ("tenant", "bob"))
    assert got[("codeloop_steps_total", who)] == len(calls) == 5
    assert got[("codeloop_tokens_total", (("direction", "output"), *who))] == out_tokens
    assert got[("codeloop_tokens_total", (("direction", "input"), *who))] == in_tokens
    assert got[("codeloop_sessions", (("status", "finished"),))] == 1
    assert got[("codeloop_approvals_waiting", ())] == 0
    assert got[("codeloop_model_latency_seconds_count", (("model", model),))] == 5
    assert got[("codeloop_tool_latency_seconds_count", (("tool", "run"),))] == 2
    assert got[("codeloop_sandbox_spawns_total", (("sandbox", "bwrap"),))] >= 2


def test_health_and_readiness(data_dir: Path, tmp_path: Path) -> None:
    with live_server(data_dir, defaults=DEFAULTS, allowed_roots=[tmp_path]) as base:
        assert httpx.get(f"{base}/healthz").json() == {"status": "ok"}
        ready = httpx.get(f"{base}/readyz")
        assert ready.status_code == 200 and ready.json() == {"status": "ready"}


def test_readiness_fails_when_the_database_goes_away(data_dir: Path, tmp_path: Path,
                                                     pg_url: str) -> None:
    import psycopg

    with live_server(data_dir, defaults=DEFAULTS, allowed_roots=[tmp_path],
                     database_url=pg_url) as base:
        assert httpx.get(f"{base}/readyz").status_code == 200
        name = pg_url.rsplit("/", 1)[1]
        with psycopg.connect(pg_url.rsplit("/", 1)[0] + "/postgres", autocommit=True) as c:
            c.execute(f'DROP DATABASE "{name}" WITH (FORCE)'.encode())
        ready = httpx.get(f"{base}/readyz", timeout=30)
        assert ready.status_code == 503
        assert ready.json()["status"] == "unavailable" and "postgresql" not in ready.text
        assert httpx.get(f"{base}/healthz").status_code == 200


def test_denials_and_waiting_approvals_are_counted(serve: Callable[..., Api], repo: Path,
                                                   tmp_path: Path) -> None:
    cfg = Settings(sandbox=True, approval_mode="full-auto",
                   permissions={"deny": ["run(python3 -c *)"]})
    api = serve(defaults=cfg)
    denied = write_script(tmp_path / "deny.json", [
        turn(call("run", command="python3 -c 'print(1)'")), turn(call("finish", summary="x"))])
    sid = api.create(repo, denied)
    api.wait(sid, lambda d: not d["active"] and d["status"] not in ("created", "running"))
    asking = api.create(repo, write_script(tmp_path / "ask.json", [
        turn(call("run", command=TEST_CMD)), turn(call("finish", summary="x"))]),
        approval_mode="auto-edit")
    api.wait_status(asking, "waiting_approval")
    got = samples(api.get("/metrics").text)
    assert got[("codeloop_policy_denials_total", (("source", "rules"),))] == 1
    assert got[("codeloop_approvals_waiting", ())] == 1
    assert got[("codeloop_sessions", (("status", "waiting_approval"),))] == 1
