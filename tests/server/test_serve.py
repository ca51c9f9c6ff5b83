"""`codeloop serve` starts a real server on 127.0.0.1 and tells where the token is."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import httpx


def test_serve_binds_loopback_and_serves_page_and_api(tmp_path: Path) -> None:
    data = tmp_path / "data"
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "config"),
           "PYTHONPATH": str(Path(__file__).parents[2] / "src")}
    proc = subprocess.Popen([sys.executable, "-m", "codeloop", "serve", "--port", "0",
                             "--data-dir", str(data)], stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        second = proc.stdout.readline()
        match = re.search(r"http://127\.0\.0\.1:(\d+)/", first)
        assert match, first
        assert str(data / "server-token") in second
        base = match.group(0)
        token = (data / "server-token").read_text().strip()
        assert "<title>codeloop</title>" in httpx.get(base).text
        assert httpx.get(base + "sessions").status_code == 401
        who = httpx.get(base + "whoami", headers={"Authorization": f"Bearer {token}"})
        assert who.json() == {"user": "admin", "tenant": "", "role": "operator"}
    finally:
        proc.terminate()
        proc.wait(timeout=30)
