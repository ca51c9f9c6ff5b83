"""The branch commit's message: from the small model through the router (recorded), cleaned
of escapes and secrets; by rule when the model fails."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codeloop.cli import main
from codeloop.events import SessionStarted
from codeloop.session.store import SQLiteEventStore
from codeloop.workspace.factory import open_workspace
from codeloop.workspace.locate import event_store_path, session_workspace_dir
from codeloop.workspace.safe_git import git_text
from tests.handoff.conftest import head


def scripted_session(repo: Path, tmp_path: Path, turns: list[dict[str, object]]) -> str:
    script = tmp_path / "script.json"
    script.write_text(json.dumps(turns))
    store = SQLiteEventStore(event_store_path())
    store.create("s-msg")
    store.append("s-msg", [SessionStarted(
        task="Make main return 5", repo=str(repo), model=f"scripted:{script}",
        config={"model": f"scripted:{script}"}, base_commit=head(repo))])
    open_workspace(repo, session_workspace_dir("s-msg")).write("src/app.py", b"x = 5\n")
    return "s-msg"


def _events(kind: str) -> list[dict[str, object]]:
    store = SQLiteEventStore(event_store_path())
    return [e.event.model_dump() for e in store.read("s-msg") if e.event.type == kind]


def test_small_model_writes_the_message(repo: Path, tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("CODELOOP_DATA_DIR", str(tmp_path / "data"))
    secret = "sk-proj-" + "A1b2C3d4" * 5
    sid = scripted_session(repo, tmp_path, [{"text": (
        "```\n\x1b[31mReturn 5 from main\x1b[0m\n\nThe caller expects five; key " + secret
        + "\n```")}])
    assert main(["apply", sid, "--branch", "m", "--commit", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["message_source"] == "model"
    message = git_text(["log", "-1", "--format=%B", out["commit"]], repo).stdout
    assert message.startswith("Return 5 from main\n\nThe caller expects five")
    assert "\x1b" not in message and secret not in message and "```" not in message
    calls = _events("auxiliary_model_call")
    assert [(c["purpose"], c["role"], c["ok"]) for c in calls] == [
        ("commit_message", "small", True)]
    assert _events("commit_message_written")[0]["source"] == "model"


def test_failed_model_call_falls_back_by_rule(repo: Path, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("CODELOOP_DATA_DIR", str(tmp_path / "data"))
    sid = scripted_session(repo, tmp_path, [{"error": "auth"}])
    assert main(["apply", sid, "--branch", "m", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["commit"] is None and out["message_source"] == "fallback"
    assert out["message"].startswith("Make main return 5\n")
    written = _events("commit_message_written")[0]
    assert "failed" in str(written["reason"])
    assert [c["ok"] for c in _events("auxiliary_model_call")] == [False]
