"""First contact with `codeloop serve`: the startup line is a URL a person can paste, and
the admin sees the sessions `codeloop run` made in the same data directory (nobody else does)."""

from __future__ import annotations

import fcntl
import json
import os
import re
import selectors
import struct
import subprocess
import sys
import termios
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from codeloop.config import Settings
from codeloop.session.setup import start_session
from codeloop.session.store import SQLiteEventStore
from tests.cli.test_cli import cli, env_for
from tests.session.helpers import make_repo

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
PAGE_URL = re.compile(r"http://127\.0\.0\.1:\d+/\S*")


@contextmanager
def serving(tmp: Path, *args: str, terminal: bool) -> Iterator[str]:
    """`codeloop serve --port 0 ARGS` with stdout on a pseudo-terminal or a pipe; yields
    what it printed once it prints where repositories are allowed (its last startup line)."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))
    env = env_for(tmp, TERM="xterm-256color")
    proc = subprocess.Popen(
        [sys.executable, "-m", "codeloop", "serve", "--port", "0", "--data-dir",
         str(tmp / "data"), *args], stdin=subprocess.DEVNULL,
        stdout=slave if terminal else subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=tmp)
    os.close(slave)
    stream = master if terminal else proc.stdout.fileno()  # type: ignore[union-attr]
    sel = selectors.DefaultSelector()
    sel.register(stream, selectors.EVENT_READ)
    out = b""
    try:
        deadline = time.monotonic() + 60
        while b"repositories allowed under" not in out and time.monotonic() < deadline:
            if sel.select(timeout=0.5):
                chunk = os.read(stream, 65536)
                if not chunk:
                    break
                out += chunk
        assert b"repositories allowed under" in out, (out, proc.stderr)
        yield ANSI.sub("", out.decode())
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        os.close(master)


def _get(url: str, token: str | None = None) -> Any:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=30) as r:
        body = r.read().decode()
    return json.loads(body) if r.headers.get_content_type() == "application/json" else body


def _cli_session(tmp: Path) -> str:
    """A finished session made by `codeloop run` in the data directory."""
    repo = make_repo(tmp)
    script = tmp / "script.json"
    script.write_text(json.dumps([
        {"tool_calls": [{"name": "finish", "arguments": {"summary": "nothing to do"}}]}]))
    out = cli(tmp, "run", "look around", "--repo", str(repo), "--model", f"scripted:{script}")
    assert out.returncode == 0, out.stderr
    listed = json.loads(cli(tmp, "sessions", "--json").stdout)
    assert [row["owner"] for row in listed] == ["local"]
    return str(listed[0]["id"])


def test_the_startup_line_is_a_url_to_paste_and_the_admin_sees_cli_sessions(
        tmp_path: Path) -> None:
    sid = _cli_session(tmp_path)
    alice = cli(tmp_path, "token", "alice", "--data-dir", str(tmp_path / "data")).stdout.strip()
    with serving(tmp_path, terminal=True) as printed:
        assert "$(" not in printed
        pasted = next(m.group(0) for m in PAGE_URL.finditer(printed) if "#token=" in m.group(0))
        base, _, fragment = pasted.partition("#")
        # What a browser does with the pasted URL: the fragment stays in the page.
        assert "<title>codeloop</title>" in _get(base)
        token = urllib.parse.parse_qs(fragment)["token"][0]
        assert token == (tmp_path / "data" / "server-token").read_text().strip()
        listed = _get(base + "sessions", token)
        assert [s["id"] for s in listed] == [sid]
        detail = _get(f"{base}sessions/{sid}", token)
        assert detail["status"] == "finished" and detail["summary"].startswith("nothing to do")
        assert _get(f"{base}sessions/{sid}/events", token)[0]["type"] == "session_started"
        # Another user sees neither the list entry nor the session.
        assert _get(base + "sessions", alice) == []
        with pytest.raises(urllib.error.HTTPError) as hidden:
            _get(f"{base}sessions/{sid}", alice)
        assert hidden.value.code == 404


def test_the_token_stays_out_of_output_that_is_not_a_terminal(tmp_path: Path) -> None:
    with serving(tmp_path, terminal=False) as printed:
        token = (tmp_path / "data" / "server-token").read_text().strip()
        assert token not in printed and "$(" not in printed
        assert str(tmp_path / "data" / "server-token") in printed
        base = PAGE_URL.search(printed)
        assert base is not None and "<title>codeloop</title>" in _get(base.group(0))


def test_no_token_can_be_made_for_the_command_line_owner(tmp_path: Path) -> None:
    out = cli(tmp_path, "token", "local", "--data-dir", str(tmp_path / "data"))
    assert out.returncode == 2 and "'local' is reserved" in out.stderr
    tokens = tmp_path / "data" / "tokens.json"
    assert not tokens.exists() or "local" not in tokens.read_text()


def test_the_server_does_not_take_over_a_cli_session(tmp_path: Path) -> None:
    """A session `codeloop run` was driving when it was killed stays `codeloop resume`'s."""
    repo = make_repo(tmp_path / "elsewhere")
    store = SQLiteEventStore(tmp_path / "data" / "events.sqlite")
    sid = start_session(store, "fix it", repo, Settings(model="scripted:x"), "scripted")
    before = store.get(sid)
    assert before.status == "running"
    work = tmp_path / "work"
    work.mkdir()
    with serving(tmp_path, "--allow-root", str(work), terminal=False):
        time.sleep(2)  # a recovered session would be queued and ended by now
        after = store.get(sid)
    assert (after.status, after.last_seq) == (before.status, before.last_seq)
