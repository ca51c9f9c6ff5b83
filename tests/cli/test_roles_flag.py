"""`--roles/--no-roles`: the flag beats the config and CODELOOP_ROLES, is recorded with the
session's settings, and a `resume` given no flag keeps the roles the session started with."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.cli.pty_driver import run_in_pty
from tests.cli.test_cli import cli
from tests.session.helpers import make_repo
from tests.session.test_roles_review import REVIEW_SCRIPT


def _script(tmp: Path, turns: list[dict[str, Any]]) -> Path:
    path = tmp / "script.json"
    path.write_text(json.dumps(turns))
    return path


def _only_session(tmp: Path) -> str:
    [row] = json.loads(cli(tmp, "sessions", "--json").stdout)
    return str(row["id"])


def _events(tmp: Path, sid: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in cli(tmp, "show", sid, "--json").stdout.splitlines()]


def _roles_recorded(events: list[dict[str, Any]]) -> bool:
    started = next(e for e in events if e["type"] == "session_started")
    return bool(started["config"]["roles"]["enabled"])


def _config(tmp: Path, text: str) -> None:
    config = tmp / "config" / "codeloop" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(text)


def test_roles_flag_turns_roles_on_and_a_resume_keeps_them(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    _config(tmp_path, "verify_on_finish = false\n")
    script = _script(tmp_path, [{"text": t.text, "tool_calls": t.tool_calls}
                                for t in REVIEW_SCRIPT])
    # No config, no CODELOOP_ROLES: only the flag turns roles on. Approval mode ask asks
    # about the planner's plan first; "p" pauses the session there.
    paused = run_in_pty(tmp_path, "run", "make the tests pass", "--repo", str(repo),
                        "--model", f"scripted:{script}", "--roles", "--approval-mode", "ask",
                        answers=("p",))
    assert paused.code == 6 and len(paused.prompts) == 1, paused.text[-2000:]
    assert "plan" in paused.prompts[0].decode().lower()
    sid = _only_session(tmp_path)
    assert _roles_recorded(_events(tmp_path, sid))

    # Resumed with no --roles: the session's own setting holds; planner, coder and reviewer
    # take their turns (the script's review calls need the reviewer's tools). The plan
    # waiting for approval is asked again; nothing after it is.
    resumed = run_in_pty(tmp_path, "resume", sid, "--approval-mode", "full-auto",
                         answers=("y",))
    assert resumed.code == 0, resumed.text[-3000:] + resumed.err.decode()
    assert len(resumed.prompts) == 1 and "approve plan?" in resumed.prompts[0].decode()
    events = _events(tmp_path, sid)
    verdicts = [e["verdict"] for e in events if e["type"] == "review_given"]
    assert verdicts == ["send_back", "approve"]
    assert events[-1]["type"] == "session_finished" and events[-1]["status"] == "finished"


def test_no_roles_beats_the_config_and_the_environment(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    _config(tmp_path, "verify_on_finish = false\n[roles]\nenabled = true\n")
    script = _script(tmp_path, [
        {"tool_calls": [{"name": "edit_file", "arguments": {
            "path": "calc.py", "old": "return a - b", "new": "return a + b"}}]},
        {"tool_calls": [{"name": "finish", "arguments": {"summary": "fixed"}}]},
    ])
    screen = run_in_pty(tmp_path, "run", "fix add", "--repo", str(repo), "--model",
                        f"scripted:{script}", "--no-roles", CODELOOP_ROLES="1")
    assert screen.code == 0, screen.text[-3000:] + screen.err.decode()
    events = _events(tmp_path, _only_session(tmp_path))
    assert not _roles_recorded(events)
    # One agent did everything: no plan was asked for and no review ran.
    assert not any(e["type"] in ("review_requested", "plan_proposed") for e in events)
    assert events[-1]["status"] == "finished"
