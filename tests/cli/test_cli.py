"""The command line end to end, as a user runs it (subprocesses, a real repo, a local server)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.llm.fake_server import FakeProvider, Reply, openai_stream
from tests.session.helpers import TEST_CMD, make_repo

ROOT = Path(__file__).resolve().parents[2]


# Kept from the suite's environment: conftest turns embeddings off unless a test asks; without
# it every `codeloop` a test starts would load the embedding model (~4 s of CPU a start).
KEPT_SETTINGS = ("CODELOOP_EMBEDDINGS",)


def kept_settings() -> dict[str, str]:
    """The suite's settings a test keeps when it gives a started process an environment of
    its own making."""
    return {k: os.environ[k] for k in KEPT_SETTINGS if k in os.environ}


def env_for(tmp: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k in KEPT_SETTINGS or not k.startswith(("CODELOOP_", "OPENAI_", "ANTHROPIC_"))}
    env.update(HOME=str(tmp / "home"), XDG_CONFIG_HOME=str(tmp / "config"),
               CODELOOP_DATA_DIR=str(tmp / "data"), PYTHONPATH=str(ROOT / "src"),
               COLUMNS="200", **extra)
    return env


def cli(tmp: Path, *args: str, timeout: float = 120, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "codeloop", *args], env=env_for(tmp, **extra),
                          capture_output=True, text=True, timeout=timeout, cwd=tmp)


def test_demo_runs_offline_and_says_the_model_is_scripted(tmp_path: Path) -> None:
    out = cli(tmp_path, "demo")
    assert out.returncode == 0, out.stderr
    assert "SCRIPTED" in out.stdout
    assert "+    return sum(values) / len(values)" in out.stdout
    assert "finished" in out.stdout


def test_no_model_configured_says_how_to_configure_one(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    out = cli(tmp_path, "run", "fix it", "--repo", str(repo))
    assert out.returncode == 2
    assert "no model is configured" in out.stderr and "--model" in out.stderr
    assert "Traceback" not in out.stderr


def test_bad_repository_path_is_a_clear_error(tmp_path: Path) -> None:
    out = cli(tmp_path, "run", "fix it", "--repo", str(tmp_path / "nope"), "--model", "scripted:x")
    assert out.returncode == 2 and "does not exist" in out.stderr
    assert "Traceback" not in out.stderr


def test_unknown_session_is_a_clear_error(tmp_path: Path) -> None:
    out = cli(tmp_path, "show", "doesnotexist")
    assert out.returncode == 2 and "no session" in out.stderr


def fix_replies() -> list[Reply]:
    return [
        Reply(sse=openai_stream("Looking.", [("c1", "read_file", '{"path": "calc.py"}')])),
        Reply(sse=openai_stream("", [("c2", "edit_file", json.dumps(
            {"path": "calc.py", "old": "return a - b", "new": "return a + b"}))])),
        Reply(sse=openai_stream("", [("c3", "run", json.dumps({"command": TEST_CMD}))])),
        Reply(sse=openai_stream("", [("c4", "finish", '{"summary": "fixed add"}')])),
    ]


def test_run_with_an_openai_compatible_endpoint_then_inspect_export_replay(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    fake = FakeProvider(replies=fix_replies()).start()
    try:
        out = cli(tmp_path, "run", "make the tests pass", "--repo", str(repo), "--model",
                  "openai:gpt-4o", "--base-url", fake.url + "/v1", OPENAI_API_KEY="sk-test")
    finally:
        fake.stop()
    assert out.returncode == 0, out.stderr + out.stdout
    assert "+    return a + b" in out.stdout and "edit_file" in out.stdout
    headers = {k.lower(): v for k, v in fake.requests[0]["headers"].items()}
    assert headers["authorization"] == "Bearer sk-test"

    listed = json.loads(cli(tmp_path, "sessions", "--json").stdout)
    assert len(listed) == 1 and listed[0]["status"] == "finished" and listed[0]["steps"] == 4
    sid = listed[0]["id"]
    shown = cli(tmp_path, "show", sid)
    assert "fixed add" in shown.stdout and "+    return a + b" in shown.stdout

    export = tmp_path / "trajectory.json"
    assert cli(tmp_path, "export", sid, "-o", str(export)).returncode == 0
    doc = json.loads(export.read_text())
    assert len(doc["requests"]) == 4 and doc["requests"][0]["messages"][0]["role"] == "system"
    assert doc["summary"]["steps"] == 4 and "+    return a + b" in doc["diff"]
    assert any(e["type"] == "tool_call_finished" for e in doc["events"])
    assert "sk-test" not in export.read_text()

    fresh = make_repo(tmp_path / "again")
    replayed = cli(tmp_path, "replay", str(export), "--repo", str(fresh))
    assert replayed.returncode == 0, replayed.stderr
    assert "+    return a + b" in replayed.stdout


def test_json_output_is_one_event_per_line(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    fake = FakeProvider(replies=fix_replies()).start()
    try:
        out = cli(tmp_path, "run", "fix", "--repo", str(repo), "--json", "--model", "openai:m",
                  "--base-url", fake.url + "/v1")
    finally:
        fake.stop()
    events = [json.loads(line) for line in out.stdout.splitlines()]
    assert events[0]["type"] == "session_started" and events[-1]["type"] == "session_finished"
    assert [e["seq"] for e in events] == list(range(events[0]["seq"], events[-1]["seq"] + 1))


@pytest.mark.slow
def test_kill_during_a_command_then_resume_from_the_cli(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    script = tmp_path / "script.json"
    script.write_text(json.dumps([
        {"tool_calls": [{"name": "edit_file", "arguments": {
            "path": "calc.py", "old": "return a - b", "new": "return a + b"}}]},
        {"tool_calls": [{"name": "run", "arguments": {"command": "sleep 30; echo slept"}}]},
        {"tool_calls": [{"name": "finish", "arguments": {"summary": "done"}}]},
    ]))
    proc = subprocess.Popen([sys.executable, "-m", "codeloop", "run", "fix", "--repo", str(repo),
                             "--model", f"scripted:{script}", "--json"],
                            env=env_for(tmp_path), stdout=subprocess.PIPE, text=True, cwd=tmp_path)
    assert proc.stdout is not None
    sid = None
    for line in proc.stdout:
        event = json.loads(line)
        sid = event["session_id"]
        if event["type"] == "tool_call_started" and event["call"]["name"] == "run":
            time.sleep(0.5)
            proc.send_signal(signal.SIGKILL)
            break
    proc.wait(timeout=30)
    assert sid is not None
    sessions = json.loads(cli(tmp_path, "sessions", "--json").stdout)
    assert sessions[0]["status"] == "running"
    # Let the scripted model skip the slow command when it retries the interrupted call.
    script.write_text(script.read_text().replace("sleep 30; echo slept", "echo quick"))
    out = cli(tmp_path, "resume", sid, "--json")
    assert out.returncode == 0, out.stderr
    kinds = [json.loads(line)["type"] for line in out.stdout.splitlines()]
    assert kinds[0] == "session_resumed" and kinds[-1] == "session_finished"
    interrupted = [json.loads(line) for line in out.stdout.splitlines()
                   if '"interrupted": true' in line]
    assert interrupted and interrupted[0]["output"].startswith("[interrupted]")
    assert "+    return a + b" in cli(tmp_path, "diff", sid).stdout


def test_exit_code_tells_how_the_session_ended(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"text": "hmm"}] * 10))
    out = cli(tmp_path, "run", "fix", "--repo", str(repo), "--model", f"scripted:{script}")
    assert out.returncode == 4, out.stdout[-500:]  # stuck


def test_brackets_in_model_text_and_output_are_shown_verbatim(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    script = tmp_path / "script.json"
    script.write_text(json.dumps([
        {"text": "Look at [bold]this[/] and [red]", "tool_calls": [
            {"name": "run", "arguments": {"command": "echo '[before edits] [/]'"}}]},
        {"tool_calls": [{"name": "finish", "arguments": {"summary": "[done] for [real]"}}]},
    ]))
    out = cli(tmp_path, "run", "fix", "--repo", str(repo), "--model", f"scripted:{script}")
    assert out.returncode == 0, out.stderr
    assert "[bold]this[/]" in out.stdout and "[before edits] [/]" in out.stdout
    assert "[done] for [real]" in out.stdout


def test_usage_errors_have_no_traceback(tmp_path: Path) -> None:
    out = cli(tmp_path, "sessions", "--bogus")
    assert out.returncode == 2 and "No such option" in out.stderr
    assert "Traceback" not in out.stderr


def _one_instance(tmp: Path) -> Path:
    """One real-shaped flask instance whose mirror is absent from the --mirrors directory."""
    inst = {"instance_id": "pallets__flask-0001", "repo": "pallets/flask",
            "base_commit": "0" * 40, "version": "2.3", "patch": "", "test_patch": "",
            "problem_statement": "x", "FAIL_TO_PASS": ["tests/test_x.py::test_x"],
            "PASS_TO_PASS": [], "environment_setup_commit": "0" * 40}
    path = tmp / "instances.jsonl"
    path.write_text(json.dumps(inst) + "\n")
    return path


def test_eval_makes_the_directories_its_options_name(tmp_path: Path) -> None:
    work, out = tmp_path / "scratch" / "deeper", tmp_path / "results" / "one.jsonl"
    run = cli(tmp_path, "eval", "swebench", "--instances", str(_one_instance(tmp_path)),
              "--mirrors", str(tmp_path / "mirrors"), "--env-cache", str(tmp_path / "envs"),
              "--work-dir", str(work), "--trajectories", str(tmp_path / "traj" / "a"),
              "--model", "oracle", "--out", str(out), "--json")
    # The directories come first; then the missing mirror stops the run with its own advice.
    assert work.is_dir() and (tmp_path / "traj" / "a").is_dir() and out.parent.is_dir()
    assert run.returncode == 2
    assert "no bare mirror" in run.stderr and "Traceback" not in run.stderr


def test_eval_work_dir_that_is_a_file_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "taken").write_text("")
    run = cli(tmp_path, "eval", "swebench", "--instances", str(_one_instance(tmp_path)),
              "--mirrors", str(tmp_path), "--work-dir", str(tmp_path / "taken" / "w"))
    assert run.returncode != 0
    assert "--work-dir" in run.stderr and "Traceback" not in run.stderr
