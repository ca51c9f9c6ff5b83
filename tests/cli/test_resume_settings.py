"""`resume` continues a session with the settings it started with (endpoint, approvals,
budgets); a flag given to it changes that setting from then on, and the log says so; an
endpoint that fails before the model answers leaves the session resumable."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from tests.cli.pty_driver import run_in_pty
from tests.cli.test_bad_input import PROBE_EXTRA_S, startup_s
from tests.cli.test_cli import cli, env_for, fix_replies
from tests.llm.fake_server import FakeProvider, Reply, openai_error, openai_stream
from tests.session.helpers import make_repo

KEY = "sk-from-the-config-file-4242"
SLOW_S = 60  # a model reply this slow is never waited for: the test kills the CLI first


def _slow() -> Reply:
    return Reply(sse=openai_stream("", [("slow", "read_file", '{"path": "calc.py"}')]),
                 delay_first_s=SLOW_S)


def _killed_while_waiting(tmp: Path, fake: FakeProvider, calls: int, *args: str,
                         **env: str) -> None:
    """Run `codeloop ARGS` until the fake server has seen `calls` model calls, then kill -9
    it (the last call is a slow reply): the session is left running, mid-step."""
    proc = subprocess.Popen([sys.executable, "-m", "codeloop", *args, "--json"],
                            env=env_for(tmp, **env), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, cwd=tmp)
    deadline = time.monotonic() + 120
    while len(fake.requests) < calls and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert proc.poll() is None, f"the CLI ended early ({proc.returncode})"
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)


def _session(tmp: Path) -> dict[str, object]:
    rows = json.loads(cli(tmp, "sessions", "--json").stdout)
    assert len(rows) == 1
    return dict(rows[0])


def _events(tmp: Path, sid: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in cli(tmp, "show", sid, "--json").stdout.splitlines()]


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _config_key(tmp: Path) -> None:
    (tmp / "config" / "codeloop").mkdir(parents=True)
    (tmp / "config" / "codeloop" / "config.toml").write_text(f'api_key = "{KEY}"\n')


def _started_on(tmp: Path, fake: FakeProvider, *extra: str) -> str:
    """A session on `fake` that ran one step and was killed waiting for the second."""
    repo = make_repo(tmp)
    _killed_while_waiting(tmp, fake, 2, "run", "make the tests pass", "--repo", str(repo),
                          "--model", "openai:m", "--base-url", fake.url + "/v1", *extra)
    row = _session(tmp)
    assert row["status"] == "running" and row["steps"] == 1
    return str(row["id"])


def test_a_session_resumes_against_its_own_base_url_with_the_users_key(tmp_path: Path) -> None:
    _config_key(tmp_path)
    first = Reply(sse=openai_stream("", [("c0", "read_file", '{"path": "calc.py"}')]))
    fake = FakeProvider(replies=[first, _slow(), *fix_replies()[1:]]).start()
    try:
        sid = _started_on(tmp_path, fake)
        screen = run_in_pty(tmp_path, "resume", sid, timeout=120)
    finally:
        fake.stop()
    assert screen.code == 0, screen.text[-3000:] + screen.err.decode()
    assert len(fake.requests) == 5  # every call of the resumed run went to the recorded URL
    resumed = [{k.lower(): v for k, v in r["headers"].items()} for r in fake.requests[2:]]
    assert all(h["authorization"] == f"Bearer {KEY}" for h in resumed)
    assert _session(tmp_path)["status"] == "finished"
    # The key is the user's, as configured now: never in the log.
    log = (tmp_path / "data" / "events.sqlite").read_bytes()
    assert KEY.encode() not in log and KEY not in cli(tmp_path, "export", sid).stdout


def test_an_endpoint_from_openai_base_url_is_recorded_and_resumed(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    first = Reply(sse=openai_stream("", [("c0", "read_file", '{"path": "calc.py"}')]))
    fake = FakeProvider(replies=[first, _slow(), *fix_replies()[1:]]).start()
    try:
        _killed_while_waiting(tmp_path, fake, 2, "run", "make the tests pass", "--repo",
                              str(repo), "--model", "openai:m",
                              OPENAI_BASE_URL=fake.url + "/v1")
        sid = str(_session(tmp_path)["id"])
        # A new shell, without the variable: the session still knows where its model is.
        screen = run_in_pty(tmp_path, "resume", sid, timeout=120)
    finally:
        fake.stop()
    assert screen.code == 0, screen.text[-3000:] + screen.err.decode()
    assert len(fake.requests) == 5


def test_an_ask_session_resumed_in_a_terminal_still_asks(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    script = tmp_path / "script.json"
    script.write_text(json.dumps([
        {"tool_calls": [{"name": "edit_file", "arguments": {
            "path": "calc.py", "old": "return a - b", "new": "return a + b"}}]},
        {"tool_calls": [{"name": "write_file", "arguments": {
            "path": "NOTES.md", "content": "add() fixed\n"}}]},
        {"tool_calls": [{"name": "finish", "arguments": {"summary": "fixed"}}]},
    ]))
    paused = run_in_pty(tmp_path, "run", "fix add", "--repo", str(repo), "--model",
                        f"scripted:{script}", "--approval-mode", "ask", answers=("p",))
    assert paused.code == 6 and len(paused.prompts) == 1, paused.text[-2000:]
    sid = str(_session(tmp_path)["id"])

    resumed = run_in_pty(tmp_path, "resume", sid, answers=("y", "y"))
    assert resumed.code == 0, resumed.text[-3000:] + resumed.err.decode()
    # The pending edit is asked again, and so is the next write: still approval mode ask.
    assert len(resumed.prompts) == 2 and "approve write_file?" in resumed.prompts[1].decode()
    decided = [e for e in _events(tmp_path, sid) if e["type"] == "policy_decided"]
    assert not any("full-auto" in str(e["reason"]) for e in decided)


def test_flags_given_to_resume_override_from_then_on_and_are_recorded(tmp_path: Path) -> None:
    first = Reply(sse=openai_stream("", [("c0", "read_file", '{"path": "calc.py"}')]))
    old = FakeProvider(replies=[first, _slow()]).start()
    new = FakeProvider(replies=[_slow(), *fix_replies()[1:]]).start()
    try:
        sid = _started_on(tmp_path, old, "--max-steps", "20")
        _killed_while_waiting(tmp_path, new, 1, "resume", sid, "--base-url", new.url + "/v1",
                              "--model", "openai:m2", "--max-steps", "30")
        changed = [e for e in _events(tmp_path, sid) if e["type"] == "settings_overridden"]
        assert [e["changes"] for e in changed] == [
            {"base_url": new.url + "/v1", "model": "openai:m2", "budgets": {"max_steps": 30}}]
        assert new.requests[0]["json"]["model"] == "m2"
        assert _session(tmp_path)["model"] == "openai:m2"
        shown = cli(tmp_path, "show", sid).stdout
        assert "settings changed from here on" in shown and "budgets.max_steps → 30" in shown

        # The override holds for the next resume too, given no flag at all.
        again = run_in_pty(tmp_path, "resume", sid, timeout=120)
    finally:
        old.stop()
        new.stop()
    assert again.code == 0, again.text[-3000:] + again.err.decode()
    assert len(old.requests) == 2 and len(new.requests) == 4
    assert all(r["json"]["model"] == "m2" for r in new.requests)


def test_an_endpoint_that_fails_before_the_model_answers_leaves_the_session_resumable(
        tmp_path: Path) -> None:
    first = Reply(sse=openai_stream("", [("c0", "read_file", '{"path": "calc.py"}')]))
    good = FakeProvider(replies=[first, _slow(), *fix_replies()[1:]]).start()
    refusing = FakeProvider(replies=[openai_error(401, "invalid api key")]).start()
    try:
        sid = _started_on(tmp_path, good)
        down = f"http://127.0.0.1:{_closed_port()}/v1"
        baseline = startup_s(tmp_path, tmp_path, "resume", sid, "--model", "foo")
        began = time.monotonic()
        refused = run_in_pty(tmp_path, "resume", sid, "--base-url", down, timeout=60)
        took = time.monotonic() - began
        said = refused.text + refused.err.decode()
        assert refused.code == 2, said[-2000:]
        assert took < baseline + PROBE_EXTRA_S, f"{took:.1f} s ({baseline:.1f} s to start)"
        assert down in said and "refused" in said.lower()
        assert f"codeloop resume {sid} --base-url" in said and "Traceback" not in said
        assert _session(tmp_path)["status"] == "running"
        assert not any(e["type"] == "settings_overridden" for e in _events(tmp_path, sid))

        no_key = run_in_pty(tmp_path, "resume", sid, "--base-url", refusing.url + "/v1",
                            timeout=60)
        said = no_key.text + no_key.err.decode()
        assert no_key.code == 6, said[-2000:]
        assert "invalid api key" in said and f"codeloop resume {sid}" in said
        assert "--base-url" in said and "Traceback" not in said
        assert _session(tmp_path)["status"] == "paused"  # not a terminal error

        fixed = run_in_pty(tmp_path, "resume", sid, "--base-url", good.url + "/v1", timeout=120)
    finally:
        good.stop()
        refusing.stop()
    assert fixed.code == 0, fixed.text[-3000:] + fixed.err.decode()
    assert _session(tmp_path)["status"] == "finished"
