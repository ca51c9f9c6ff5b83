"""Bad input at the terminal is refused at once (or after one short probe), in words that
name what is wrong, with no traceback and no half-made session left behind."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

import pytest

from tests.cli.pty_driver import Screen, run_in_pty
from tests.cli.test_cli import cli
from tests.session.helpers import make_repo

# Python starting and importing codeloop takes a second or two on a busy machine, and has
# taken over 12 s with four pytest-xdist workers on two cores beside other work. A refusal
# that needs no network only has to come without hanging.
PROMPT_S = 30.0
# Retries of a dead endpoint took 15-25 s more than start-up; one probe of a closed port
# takes milliseconds. So a probe is timed against a refusal that needs no network, run just
# before under the same load, not by the clock alone (two starts at load 11 differed by 8 s).
PROBE_EXTRA_S = 12.0


def startup_s(tmp: Path, repo: Path, *args: str) -> float:
    """Seconds for a command (by default `codeloop run`) to refuse a model that names no
    provider: everything a probe comes after, without the network."""
    began = time.monotonic()
    argv = args or ("run", "fix it", "--repo", str(repo), "--model", "foo")
    screen = run_in_pty(tmp, *argv, timeout=60)
    assert screen.code == 2, (screen.text + screen.err.decode())[-2000:]
    return time.monotonic() - began


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _refused(tmp: Path, *args: str) -> tuple[Screen, str, float]:
    began = time.monotonic()
    screen = run_in_pty(tmp, *args, timeout=60)
    took = time.monotonic() - began
    said = screen.text + screen.err.decode()
    assert screen.code == 2, said[-2000:]
    assert "Traceback" not in said and "error:" in said
    return screen, said, took


@pytest.mark.parametrize(("flags", "named"), [
    (["--model", "openai:"], "has no name"),
    (["--model", "openai:  "], "has no name"),
    (["--model", "foo"], "names no provider"),
    (["--model", "nosuch:m"], "unknown model provider"),
    (["--model", "openai:m", "--base-url", "notaurl"], "'notaurl' is not an http(s) URL"),
    (["--model", "openai:m", "--base-url", "ftp://x"], "its scheme is 'ftp'"),
    (["--model", "openai:m", "--base-url", "http://"], "names no host"),
    (["--model", "openai:m", "--base-url", "http://127.0.0.1:notaport/v1"], "not a valid URL"),
])
def test_a_bad_model_or_url_is_refused_at_once(tmp_path: Path, flags: list[str],
                                               named: str) -> None:
    repo = make_repo(tmp_path)
    _, said, took = _refused(tmp_path, "run", "fix it", "--repo", str(repo), *flags)
    assert named in said and took < PROMPT_S
    assert json.loads(cli(tmp_path, "sessions", "--json").stdout) == []


def test_a_base_url_where_nothing_listens_is_one_short_probe(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    baseline = startup_s(tmp_path, repo)
    _, said, took = _refused(tmp_path, "run", "fix it", "--repo", str(repo), "--model",
                             "openai:m", "--base-url", url)
    assert f"cannot reach the model server at {url}" in said and "refused" in said.lower()
    assert took < baseline + PROBE_EXTRA_S, f"{took:.1f} s against {baseline:.1f} s to start"
    assert json.loads(cli(tmp_path, "sessions", "--json").stdout) == []


def _trajectory(**parts: object) -> dict[str, object]:
    doc: dict[str, object] = {"format": "codeloop-trajectory/1", "session": {"repo": "/r"},
                              "summary": {"task": "t"}, "events": []}
    doc.update(parts)
    return doc


@pytest.mark.parametrize(("content", "named"), [
    ("{}", "is not a codeloop trajectory"),
    ("[]", "is not a codeloop trajectory"),
    ('"x"', "is not a codeloop trajectory"),
    ("not json {", "cannot read trajectory"),
    (b"\xff\xfe\x00".decode("latin-1"), "cannot read trajectory"),
    (json.dumps({"format": "codeloop-trajectory/1"}), "session: Field required"),
    (json.dumps(_trajectory(session={"repo": 3})), "session.repo: Input should be a valid string"),
    (json.dumps(_trajectory(summary=[])), "summary: Input should be"),
    (json.dumps(_trajectory(events={})), "events: Input should be a valid list"),
    (json.dumps(_trajectory(events=[{"type": "model_call_finished", "tool_calls": [{"id": 1}]}])),
     "events.0.tool_calls.0.id"),
    (json.dumps(_trajectory(events=[{"type": "model_call_finished", "text": None}])),
     "events.0.text"),
])
def test_replay_of_a_file_that_is_not_a_trajectory_is_one_line(tmp_path: Path, content: str,
                                                               named: str) -> None:
    bad = tmp_path / "bad.json"
    bad.write_bytes(content.encode("latin-1"))
    out = cli(tmp_path, "replay", str(bad))
    assert out.returncode == 2, out.stdout[-1000:] + out.stderr
    assert "Traceback" not in out.stderr and named in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert json.loads(cli(tmp_path, "sessions", "--json").stdout) == []
