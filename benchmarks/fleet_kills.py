"""Worker kills on `serve --ray`: a session held at a known model call has its Ray worker
process SIGKILLed; the server must place it again and the resumed run must end with the
same diff as an uninterrupted run, no event lost and none duplicated.

Usage: PYTHONPATH=src python benchmarks/fleet_kills.py [--kills N]
Starts a throw-away PostgreSQL (or uses CODELOOP_TEST_DATABASE_URL) and a local Ray cluster
(head + one worker node, 1 CPU each) on this machine. Scripted sessions on generated repos.
- lost: events stored before the kill that are missing or changed afterwards, plus seq gaps;
- duplicated: seqs stored twice, plus tool calls finished twice.
Goal: kills_recovered = kills, events_lost = events_duplicated = 0.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import tempfile
import time
from collections import Counter
from contextlib import ExitStack
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fastapi.testclient import TestClient
from tests.fleet.gated import GatedFactory
from tests.fleet.ray_nodes import LocalRayCluster, wait_for_alive_nodes
from tests.pg import fresh_database, postgres_server
from tests.server.conftest import DEFAULTS, Api, write_script
from tests.session.helpers import make_repo

from codeloop.fleet import cluster
from codeloop.fleet.sessions import serve_on_ray
from codeloop.server.app import create_app
from codeloop.server.auth import TokenStore

# The fix script has five model calls; a kill lands before the second, third or fourth.
HOLD_POINTS = (2, 3, 4)
TIMEOUT_S = 300.0


def _wait_done(api: Api, sid: str) -> dict[str, Any]:
    return api.wait(sid, lambda d: d["status"] in ("finished", "paused") and not d["active"],
                    TIMEOUT_S)


def _wait_file(path: Path) -> None:
    deadline = time.monotonic() + TIMEOUT_S
    while not path.exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{path} never appeared")
        time.sleep(0.05)


def _one_kill(api: Api, root: Path, gate: Path, n: int, reference: dict[str, Any],
              hold_at: int) -> dict[str, Any]:
    for name in ("reached", "release"):
        (gate / name).unlink(missing_ok=True)
    (gate / "hold_at").write_text(str(hold_at))
    sid = api.create(make_repo(root / f"kill{n}"), write_script(root / f"kill{n}.json"))
    _wait_file(gate / "reached")
    before = api.events(sid)  # the worker is held inside a model call: nothing is in flight
    pid = int((gate / "reached").read_text())
    began = time.monotonic()
    os.kill(pid, signal.SIGKILL)
    (gate / "release").touch()
    detail = _wait_done(api, sid)
    recovered_s = time.monotonic() - began
    events = api.events(sid)
    seqs = Counter(e["seq"] for e in events)
    gaps = len(set(range(1, max(seqs) + 1)) - set(seqs))
    after = {e["seq"]: e for e in events}
    lost = gaps + sum(1 for e in before if after.get(e["seq"]) != e)
    finished = Counter(e["event"]["call_id"] for e in events if e["type"] == "tool_call_finished")
    duplicated = (sum(c - 1 for c in seqs.values())
                  + sum(c - 1 for c in finished.values()))
    diff = api.ok("get", f"/sessions/{sid}/diff")
    recovered = (detail["status"] == "finished" and diff == reference
                 and any(e["type"] == "worker_lost" for e in events))
    return {"kill": n, "hold_at": hold_at, "recovered": recovered, "events": len(events),
            "events_before_kill": len(before), "lost": lost, "duplicated": duplicated,
            "seconds_to_finish": round(recovered_s, 2)}


def run_kills(n: int) -> dict[str, Any]:
    """Kill a session's worker `n` times (one session each); the tallies the issue names."""
    with ExitStack() as stack:
        root = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="fleetkills-")))
        pg_url = stack.enter_context(fresh_database(stack.enter_context(postgres_server())))
        nodes = LocalRayCluster(workers=1)
        stack.callback(nodes.close)
        os.environ.update(nodes.driver_env)
        cluster.connect(nodes.address)
        stack.callback(cluster.disconnect)
        wait_for_alive_nodes(2)
        gate = root / "gate"
        gate.mkdir()
        data = root / "data"
        app = create_app(data, allowed_roots=[root], defaults=DEFAULTS, database_url=pg_url,
                         model_factory=GatedFactory(gate))
        serve_on_ray(app.state.service, nodes.address, pg_url)
        client = stack.enter_context(TestClient(app))
        api = Api(client, TokenStore(data).admin_token)
        (gate / "release").touch()
        ref = api.create(make_repo(root / "reference"), write_script(root / "reference.json"))
        _wait_done(api, ref)
        reference = api.ok("get", f"/sessions/{ref}/diff")
        rows = []
        for k in range(1, n + 1):
            row = _one_kill(api, root, gate, k, reference, HOLD_POINTS[k % len(HOLD_POINTS)])
            print(json.dumps(row), flush=True)
            rows.append(row)
        return {"kills": n, "kills_recovered": sum(1 for r in rows if r["recovered"]),
                "events_lost": sum(r["lost"] for r in rows),
                "events_duplicated": sum(r["duplicated"] for r in rows)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--kills", type=int, default=20)
    args = parser.parse_args()
    print(json.dumps(run_kills(args.kills)))


if __name__ == "__main__":
    main()
