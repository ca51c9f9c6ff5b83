"""`codeloop diff|apply|undo|discard` against a real event store and session workspace."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codeloop.cli import main
from codeloop.events import SessionStarted
from codeloop.session.store import SQLiteEventStore
from codeloop.workspace.factory import open_workspace
from codeloop.workspace.locate import data_dir, event_store_path, session_workspace_dir


@pytest.fixture
def session(repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("CODELOOP_DATA_DIR", str(tmp_path / "data"))
    store = SQLiteEventStore(event_store_path())
    store.create("s-123")
    store.append("s-123", [SessionStarted(task="t", repo=str(repo), model="scripted")])
    ws = open_workspace(repo, session_workspace_dir("s-123"))
    ws.write("src/app.py", b"def main():\n    return 5\n")
    ws.write("added.txt", b"hello\n")
    return "s-123"


def test_locate_follows_the_documented_order(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CODELOOP_DATA_DIR", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert data_dir() == tmp_path / "xdg" / "codeloop"
    monkeypatch.setenv("CODELOOP_DATA_DIR", str(tmp_path / "explicit"))
    assert session_workspace_dir("abc") == tmp_path / "explicit/sessions/abc/workspace"
    assert event_store_path() == tmp_path / "explicit/events.sqlite"


def test_diff_json_and_text(session: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diff", session, "--json"]) == 0
    entries = json.loads(capsys.readouterr().out)
    assert [(e["path"], e["status"]) for e in entries] == [("added.txt", "added"),
                                                          ("src/app.py", "modified")]
    assert main(["diff", session]) == 0
    out = capsys.readouterr().out
    assert "+    return 5" in out and "2 file(s) changed" in out


def test_apply_then_undo(session: str, repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["apply", session]) == 0
    out = capsys.readouterr().out
    assert "src/app.py" in out and "checkpoint 1" in out
    assert (repo / "added.txt").read_bytes() == b"hello\n"
    assert main(["undo", session, "--json"]) == 0
    assert sorted(json.loads(capsys.readouterr().out)["restored"]) == ["added.txt", "src/app.py"]
    assert not (repo / "added.txt").exists()


def test_apply_conflict_exits_nonzero(session: str, repo: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    (repo / "src/app.py").write_bytes(b"user edit\n")
    assert main(["apply", session]) == 2
    captured = capsys.readouterr()
    assert "src/app.py" in captured.out and "nothing was applied" in captured.err
    assert (repo / "src/app.py").read_bytes() == b"user edit\n"


def test_discard_and_unknown_session(session: str, repo: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["discard", session]) == 0
    assert "discarded 2" in capsys.readouterr().out
    assert main(["diff", session, "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == []
    assert main(["diff", "nope"]) == 2
