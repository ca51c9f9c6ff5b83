"""Stream latency: N concurrent scripted sessions on a real `codeloop serve`, one WebSocket
client each; the time from an event's append to its arrival at the client.

Usage: PYTHONPATH=src python benchmarks/stream_latency.py [--sessions 50] [--turns 20]
       [--think-ms 1000]
Goal: p99 < 50 ms. The server runs in its own process (as in use); latency is measured from
the event's timestamp, taken just before its append, to the client's receipt, on one clock.
Only events appended after the client connected count (earlier ones are history catch-up).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import websockets


def make_repo(root: Path, files: int) -> Path:
    repo = root / "repo"
    repo.mkdir()
    for n in range(files):
        (repo / f"mod{n}.py").write_text(f"def f{n}(a, b):\n    return a - b\n" * 20)
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    return repo


def make_script(root: Path, turns: int, think_ms: float) -> Path:
    # A different file each turn: repeating one call would trip loop detection.
    body = [{"text": f"step {n}: reading", "tool_calls": [
        {"name": "read_file", "arguments": {"path": f"mod{n}.py"}}]} for n in range(turns)]
    body.append({"text": "", "tool_calls": [{"name": "finish", "arguments": {"summary": "ok"}}]})
    path = root / "script.json"
    path.write_text(json.dumps({"turns": body, "delay_s": think_ms / 1000}))
    return path


def start_server(root: Path, sessions: int) -> tuple[subprocess.Popen[str], str, str]:
    data = root / "data"
    env = {**os.environ, "XDG_CONFIG_HOME": str(root / "config"), "CODELOOP_DATA_DIR": str(data)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "codeloop", "serve", "--port", "0", "--data-dir", str(data),
         "--per-user", str(sessions), "--workers", str(sessions)],
        stdout=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    match = re.search(r"http://[\d.]+:\d+", line)
    if not match:
        proc.kill()
        raise SystemExit(f"the server did not start: {line!r}")
    return proc, match.group(0), (data / "server-token").read_text().strip()


async def follow(base: str, token: str, sid: str, latencies: list[float],
                 arrivals: list[float]) -> str:
    """Stream one session to its end; record the latency of each live event."""
    url = base.replace("http", "ws") + f"/sessions/{sid}/stream?token={token}"
    async with websockets.connect(url, max_size=None) as ws:
        connected = time.time()
        while True:
            item: dict[str, Any] = json.loads(await ws.recv())
            now = time.time()
            if item["ts"] >= connected:
                latencies.append((now - item["ts"]) * 1000)
                arrivals.append(now)
            if item["type"] == "session_finished":
                return str(item["event"]["status"])


async def run(base: str, token: str, repo: Path, script: Path, sessions: int
              ) -> tuple[list[float], list[float], float]:
    headers = {"Authorization": f"Bearer {token}"}
    latencies: list[float] = []
    arrivals: list[float] = []
    async with httpx.AsyncClient(base_url=base, headers=headers, timeout=60) as client:
        # One session first, not measured: the server's first run imports and warms caches.
        r = await client.post("/sessions", json={
            "task": "warm-up", "repo": str(repo), "model": f"scripted:{script}"})
        r.raise_for_status()
        await follow(base, token, r.json()["id"], [], [])
        begin = time.time()
        tasks = []
        for n in range(sessions):
            r = await client.post("/sessions", json={
                "task": f"benchmark {n}", "repo": str(repo), "model": f"scripted:{script}",
                "approval_mode": "full-auto"})
            r.raise_for_status()
            sid = r.json()["id"]
            tasks.append(asyncio.create_task(follow(base, token, sid, latencies, arrivals)))
        statuses = await asyncio.gather(*tasks)
    if set(statuses) != {"finished"}:
        raise SystemExit(f"sessions did not all finish: {sorted(statuses)}")
    return latencies, arrivals, begin


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sessions", type=int, default=50)
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--think-ms", type=float, default=1000.0,
                        help="the scripted model's answer time (a real model takes seconds)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        repo = make_repo(root, args.turns)
        script = make_script(root, args.turns, args.think_ms)
        proc, base, token = start_server(root, args.sessions)
        try:
            latencies, arrivals, begin = asyncio.run(
                run(base, token, repo, script, args.sessions))
        finally:
            proc.terminate()
            proc.wait(timeout=60)
    span = max(arrivals) - begin
    p50, p95, p99 = pct(latencies, 0.5), pct(latencies, 0.95), pct(latencies, 0.99)
    print(f"{args.sessions} sessions x {args.turns + 1} turns ({args.think_ms:g} ms think): {len(latencies)} live events "
          f"in {span:.2f} s")
    print(f"append -> client latency: median {statistics.median(latencies):.2f} ms, "
          f"p95 {p95:.2f} ms, p99 {p99:.2f} ms, max {max(latencies):.2f} ms")
    print(json.dumps({"sessions": args.sessions, "p50_ms": round(p50, 2),
                      "p95_ms": round(p95, 2), "p99_ms": round(p99, 2),
                      "events_per_s": round(len(latencies) / span, 1)}))


if __name__ == "__main__":
    main()
