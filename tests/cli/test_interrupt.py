"""Ctrl-C at a real terminal: the first pauses the session (cutting a slow model reply or a
long command), says how to resume, and exits 6; a second quits at once; either way the log
is whole and the session resumes to the end."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import zlib
from pathlib import Path

from tests.cli.pty_driver import Action, Screen, Trigger, run_in_pty
from tests.cli.test_cli import cli, fix_replies
from tests.llm.fake_server import FakeProvider, Reply, openai_stream
from tests.session.helpers import make_repo

# Far longer than the pause takes even on a loaded machine (7.5 s seen at load 11), so a
# command the pause failed to kill shows as a wait of half a minute. The resume re-runs the
# call (the scripted model re-issues an interrupted call with its recorded arguments); a
# marker in the workspace makes that second run end at once, and removes itself so the diff
# stays the fix alone.
PAUSED_WITHIN_S = 20


def _sleep_for(tmp: Path) -> str:
    """A duration only this test's command uses, to find it among processes: the tests here
    run side by side on pytest-xdist workers, and one must never signal for another's."""
    return f"sleep 31.{zlib.crc32(str(tmp).encode()) % 1000:03d}"


def _long_command(tmp: Path) -> str:
    return (f"if [ -e .slept ]; then rm .slept; else touch .slept; {_sleep_for(tmp)}; fi; "
            "echo slept")


def _typed_ctrl_c(times: list[float]) -> Action:
    def press(_proc: subprocess.Popen[bytes], master: int) -> None:
        times.append(time.monotonic())
        os.write(master, b"\x03")
    return press


def _sigint(times: list[float], count: int = 1, gap_s: float = 0.0) -> Action:
    def send(proc: subprocess.Popen[bytes], _master: int) -> None:
        for n in range(count):
            if n:
                time.sleep(gap_s)
            times.append(time.monotonic())
            proc.send_signal(signal.SIGINT)
    return send


def _command_running(tmp: Path) -> Trigger:
    """Whether the test's long command is running now (inside the sandbox or not)."""
    return lambda: bool(_sleepers(tmp))


def _sleepers(tmp: Path) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            if cmdline.split(b"\0")[:2] == _sleep_for(tmp).encode().split(b" "):
                found.append(int(entry))
    return found


def _sessions(tmp: Path) -> list[dict[str, object]]:
    return list(json.loads(cli(tmp, "sessions", "--json").stdout))


def _events(tmp: Path, sid: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in cli(tmp, "show", sid, "--json").stdout.splitlines()]


def _assert_paused_with_hint(screen: Screen, sid: str) -> None:
    said = screen.text + screen.err.decode()
    assert screen.code == 6, said[-3000:]
    assert f"codeloop resume {sid}" in said and "Traceback" not in said


def _long_command_script(tmp: Path) -> Path:
    script = tmp / "script.json"
    script.write_text(json.dumps([
        {"tool_calls": [{"name": "edit_file", "arguments": {
            "path": "calc.py", "old": "return a - b", "new": "return a + b"}}]},
        {"tool_calls": [{"name": "run", "arguments": {"command": _long_command(tmp)}}]},
        {"tool_calls": [{"name": "finish", "arguments": {"summary": "done"}}]},
    ]))
    return script


def _resume_to_the_end(tmp: Path, sid: str) -> list[dict[str, object]]:
    resumed = cli(tmp, "resume", sid)
    assert resumed.returncode == 0, resumed.stdout[-2000:] + resumed.stderr
    return _events(tmp, sid)


def test_ctrl_c_during_a_slow_model_reply_pauses_and_resumes(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    slow = Reply(sse=openai_stream("", [("c0", "read_file", '{"path": "calc.py"}')]),
                 delay_first_s=60)
    fake = FakeProvider(replies=[slow, *fix_replies()]).start()
    pressed: list[float] = []
    try:
        screen = run_in_pty(tmp_path, "run", "make the tests pass", "--repo", str(repo),
                            "--model", "openai:m", "--base-url", fake.url + "/v1",
                            controlling=True, timeout=60,
                            actions=((lambda: len(fake.requests) == 1, _typed_ctrl_c(pressed)),))
        took = time.monotonic() - pressed[0]
        sid = str(_sessions(tmp_path)[0]["id"])
        _assert_paused_with_hint(screen, sid)
        assert took < 5, f"the reply was cut {took:.1f} s after Ctrl-C"
        assert _sessions(tmp_path)[0]["status"] == "paused"
        kinds = [e["type"] for e in _events(tmp_path, sid)]
        assert kinds[-2:] == ["model_call_started", "session_paused"]

        resumed = cli(tmp_path, "resume", sid)
    finally:
        fake.stop()
    assert resumed.returncode == 0, resumed.stdout[-2000:] + resumed.stderr
    assert "+    return a + b" in resumed.stdout
    assert _sessions(tmp_path)[0]["status"] == "finished"


def test_ctrl_c_during_a_long_command_kills_it_and_pauses(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    script = _long_command_script(tmp_path)
    sent: list[float] = []
    screen = run_in_pty(tmp_path, "run", "fix", "--repo", str(repo), "--model",
                        f"scripted:{script}", timeout=60,
                        actions=((_command_running(tmp_path), _sigint(sent)),))
    took = time.monotonic() - sent[0]
    sid = str(_sessions(tmp_path)[0]["id"])
    _assert_paused_with_hint(screen, sid)
    assert took < PAUSED_WITHIN_S, f"paused {took:.1f} s after Ctrl-C"
    assert not _sleepers(tmp_path), "the interrupted command still runs"
    events = _events(tmp_path, sid)
    run_started = [e for e in events if e["type"] == "tool_call_started"
                   and e["call"]["name"] == "run"]  # type: ignore[index]
    assert run_started and events[-1]["type"] == "session_paused"

    after = _resume_to_the_end(tmp_path, sid)
    interrupted = [e for e in after if e["type"] == "tool_call_finished" and e["interrupted"]]
    assert len(interrupted) == 1 and after[-1]["type"] == "session_finished"
    assert "+    return a + b" in cli(tmp_path, "diff", sid).stdout


def test_a_second_ctrl_c_quits_at_once_and_the_session_still_resumes(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    # A big change makes the pause slow to finish (it prints the final diff, seconds of
    # it): the second Ctrl-C comes while it does, and must not wait for it.
    script = _long_command_script(tmp_path)
    turns = json.loads(script.read_text())
    turns.insert(0, {"tool_calls": [{"name": "run", "arguments": {
        "command": "seq 1 40000 | sed 's/$/ of a long generated file/' > big.txt"}}]})
    script.write_text(json.dumps(turns))
    sent: list[float] = []
    screen = run_in_pty(tmp_path, "run", "fix", "--repo", str(repo), "--model",
                        f"scripted:{script}", timeout=120,
                        actions=((_command_running(tmp_path), _sigint(sent)),
                                 (b"pausing session", _sigint(sent))))
    quit_after = time.monotonic() - sent[1]
    sid = str(_sessions(tmp_path)[0]["id"])
    _assert_paused_with_hint(screen, sid)
    assert "quit at once" in screen.err.decode()
    assert quit_after < 1, f"quit {quit_after:.1f} s after the second Ctrl-C"
    assert "+40000 of a long" not in screen.text  # the diff was not waited for
    time.sleep(0.5)  # the sandbox dies with its parent; give the kernel a moment
    assert not _sleepers(tmp_path), "the command outlived the CLI"
    # Paused, or cut before the pause was written: a whole log either way, and resumable.
    assert _sessions(tmp_path)[0]["status"] in ("paused", "running")

    after = _resume_to_the_end(tmp_path, sid)
    assert after[-1]["type"] == "session_finished"
    assert after[-1]["status"] == "finished"
