"""`serve --ray`: sessions run as actors on a real two-node Ray cluster, write their events to
a real PostgreSQL, and stream through the server's HTTP API; a worker SIGKILLed mid-session
is replaced and the session resumes from its log to the same diff."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from codeloop.errors import FleetError
from codeloop.fleet import sessions as fleet_sessions
from codeloop.fleet.sessions import serve_on_ray
from codeloop.server.app import create_app
from codeloop.server.auth import TokenStore
from tests.cli.test_cli import cli
from tests.fleet.gated import GatedFactory
from tests.fleet.ray_nodes import LocalRayCluster
from tests.server.conftest import DEFAULTS, Api, write_script
from tests.session.helpers import make_repo


def test_serve_on_ray_without_postgres_names_the_variable(tmp_path: Path) -> None:
    app = create_app(tmp_path / "data", allowed_roots=[tmp_path], resume_on_start=False)
    with pytest.raises(FleetError, match="PostgreSQL") as err:
        serve_on_ray(app.state.service, "auto", None)
    assert "CODELOOP_DATABASE_URL" in err.value.hint


def test_serve_ray_without_postgres_refuses_before_listening(tmp_path: Path) -> None:
    out = cli(tmp_path, "serve", "--ray", "auto", "--port", "0", timeout=60)
    assert out.returncode != 0
    said = out.stdout + out.stderr
    assert "--ray needs the event log in PostgreSQL" in said
    assert "CODELOOP_DATABASE_URL" in said
    assert "codeloop server on" not in said


@pytest.fixture
def ray_api(ray_cluster: LocalRayCluster, pg_url: str,
            tmp_path: Path) -> Iterator[Callable[[GatedFactory], Api]]:
    """Start a server on the cluster whose model factory is `factory`."""
    clients: list[TestClient] = []

    def start(factory: GatedFactory) -> Api:
        data = tmp_path / "data"
        app = create_app(data, allowed_roots=[tmp_path], defaults=DEFAULTS,
                         database_url=pg_url, model_factory=factory)
        serve_on_ray(app.state.service, ray_cluster.address, pg_url)
        client = TestClient(app)
        client.__enter__()
        clients.append(client)
        return Api(client, TokenStore(data).admin_token)

    yield start
    for client in reversed(clients):
        client.__exit__(None, None, None)


def _session(api: Api, tmp_path: Path, name: str) -> str:
    repo = make_repo(tmp_path / name)
    return api.create(repo, write_script(tmp_path / f"{name}.json"))


def _wait(api: Api, sid: str, statuses: tuple[str, ...] | str, timeout: float) -> Any:
    wanted = (statuses,) if isinstance(statuses, str) else statuses
    return api.wait(sid, lambda d: d["status"] in wanted and not d["active"], timeout)


def _check_log(events: list[dict[str, Any]]) -> None:
    seqs = [e["seq"] for e in events]
    assert seqs == list(range(1, len(seqs) + 1)), "lost or duplicated seqs"
    finished = [e["event"]["call_id"] for e in events if e["type"] == "tool_call_finished"]
    assert len(finished) == len(set(finished)), "a tool call finished twice"


@pytest.mark.slow
def test_a_session_runs_on_a_worker_and_streams_through_the_api(
        ray_api: Callable[[GatedFactory], Api], tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    api = ray_api(GatedFactory(gate))
    sid = _session(api, tmp_path, "one")
    _wait(api, sid, ("finished"), 120)
    events = api.events(sid)
    _check_log(events)
    assert events[-1]["type"] == "session_finished"
    assert events[-1]["event"]["status"] == "finished"
    workers = {int(p.name) for p in (gate / "pids").iterdir()}
    assert workers and os.getpid() not in workers  # the model ran in a Ray worker process
    assert "return a + b" in api.ok("get", f"/sessions/{sid}/diff")["diff"]


@pytest.mark.slow
def test_a_worker_killed_mid_session_is_replaced_and_the_session_resumes(
        ray_api: Callable[[GatedFactory], Api], tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    api = ray_api(GatedFactory(gate, hold_at=3))
    gate.mkdir()
    (gate / "release").touch()
    reference = _session(api, tmp_path, "reference")  # the reference run goes straight through
    _wait(api, reference, ("finished"), 120)
    (gate / "release").unlink()

    sid = _session(api, tmp_path, "killed")
    deadline = time.monotonic() + 120
    while not (gate / "reached").exists():
        assert time.monotonic() < deadline, "the session never reached its third model call"
        time.sleep(0.05)
    pid = int((gate / "reached").read_text())
    os.kill(pid, signal.SIGKILL)
    (gate / "release").touch()
    detail = _wait(api, sid, ("finished", "paused"), 180)
    assert detail["status"] == "finished", detail

    events = api.events(sid)
    _check_log(events)
    lost = [e for e in events if e["type"] == "worker_lost"]
    assert len(lost) == 1 and not lost[0]["event"]["gave_up"]
    assert events[-1]["event"]["status"] == "finished"
    before = [e for e in events if e["seq"] < lost[0]["seq"]]
    assert any(e["type"] == "tool_call_finished" for e in before)  # it was mid-session
    diff = api.ok("get", f"/sessions/{sid}/diff")
    assert diff == api.ok("get", f"/sessions/{reference}/diff")


def _hold(api: Api, tmp_path: Path, gate: Path, name: str) -> str:
    """Start a session and wait until its worker holds inside the gated model call."""
    sid = _session(api, tmp_path, name)
    deadline = time.monotonic() + 120
    while not (gate / "reached").exists():
        assert time.monotonic() < deadline, "the session never reached the held model call"
        time.sleep(0.05)
    return sid


@pytest.mark.slow
def test_pause_and_cancel_reach_the_session_on_its_worker(
        ray_api: Callable[[GatedFactory], Api], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    # A slow poll: the request must reach the worker before the API answers, not on the
    # runner's next poll (which once let the released call take a third step under load).
    monkeypatch.setattr(fleet_sessions, "POLL_S", 5.0)
    gate = tmp_path / "gate"
    api = ray_api(GatedFactory(gate, hold_at=2))
    sid = _hold(api, tmp_path, gate, "paused")
    api.ok("post", f"/sessions/{sid}/pause")
    (gate / "release").touch()
    assert _wait(api, sid, "paused", 120)["status"] == "paused"
    steps = len([e for e in api.events(sid) if e["type"] == "model_call_finished"])
    assert steps == 2  # it stopped at the step boundary after the held call

    api.ok("post", f"/sessions/{sid}/resume")  # placed again, on any node
    assert _wait(api, sid, "finished", 120)["status"] == "finished"
    _check_log(api.events(sid))

    for name in ("reached", "release"):
        (gate / name).unlink()
    other = _hold(api, tmp_path, gate, "cancelled")
    api.ok("post", f"/sessions/{other}/cancel")
    (gate / "release").touch()
    detail = _wait(api, other, ("finished", "stopped"), 120)
    assert detail["status"] == "stopped" and detail["finish_reason"] == "stopped by the user"
    assert api.events(other)[-1]["type"] == "session_finished"
