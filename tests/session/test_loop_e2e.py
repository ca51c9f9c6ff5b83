"""The loop end to end with a scripted model on a real git repository."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from codeloop.config import Settings
from codeloop.index import warmup as warmup_module
from codeloop.index.service import RepoIndex
from codeloop.llm.scripted import Turn
from codeloop.session.state import fold
from tests.session.helpers import (
    FIX_SCRIPT,
    call,
    make_repo,
    new_session,
    scripted,
    tree_hash,
    turn,
)


def test_read_edit_test_finish_produces_the_expected_diff(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    before = tree_hash(repo)
    store, runner = new_session(tmp_path, repo, scripted(FIX_SCRIPT))
    state = runner.run()
    assert state.status == "finished"
    assert state.finished is not None and "adds" in state.finished.summary
    diff = runner.ctx.workspace.diff()
    assert "-    return a - b" in diff and "+    return a + b" in diff
    assert "calc.py" in diff and "tests/" not in diff
    assert tree_hash(repo) == before, "the user's repository must not change before apply"
    events = store.read(runner.session_id)
    kinds = [e.event.type for e in events]
    assert kinds[0] == "session_started" and kinds[-1] == "session_finished"
    assert kinds.count("model_call_finished") == 5
    assert kinds.count("tool_call_started") == kinds.count("tool_call_finished") == 5
    assert "file_edited" in kinds and "command_ran" in kinds
    runs = [e.event for e in events if e.event.type == "tool_call_finished"
            and e.event.name == "run"]
    assert not runs[0].ok and runs[1].ok
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    row = store.get(runner.session_id)
    assert row.status == "finished" and row.steps == 5


def test_fold_of_the_log_equals_the_live_state(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    store, runner = new_session(tmp_path, repo, scripted(FIX_SCRIPT))
    live = runner.run()
    folded = fold(store.read(runner.session_id))
    assert folded.steps == live.steps and folded.status == live.status
    assert folded.actions == live.actions and len(folded.edits) == 1


def test_parallel_tool_calls_in_one_turn(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    script = [
        turn(call("read_file", "a", path="calc.py"), call("list_files", "b", path="."),
             call("grep", "c", pattern="def add")),
        turn(call("finish", summary="looked around")),
    ]
    store, runner = new_session(tmp_path, repo, scripted(script))
    state = runner.run()
    assert state.status == "finished"
    results = {e.event.call_id: e.event for e in store.read(runner.session_id)
               if e.event.type == "tool_call_finished"}
    assert results["a"].ok and "return a - b" in results["a"].output
    assert "tests/test_calc.py" in results["b"].output
    assert "calc.py:1:def add" in results["c"].output


def test_paths_outside_the_repository_are_refused(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    secret = tmp_path / "secret.txt"
    secret.write_text("TOPSECRET")
    (repo / "link").symlink_to(secret)
    script = [
        turn(call("read_file", "a", path="../secret.txt"), call("read_file", "b", path=str(secret)),
             call("read_file", "c", path="link"), call("read_file", "d", path="~/.ssh/id_rsa")),
        turn(call("finish", summary="tried")),
    ]
    store, runner = new_session(tmp_path, repo, scripted(script))
    runner.run()
    for e in store.read(runner.session_id):
        if e.event.type == "tool_call_finished" and e.event.name == "read_file":
            error = e.event.error or ""
            assert not e.event.ok and ("outside" in error or "home directory" in error)
            assert "TOPSECRET" not in e.event.output


def test_model_error_ends_with_error_status(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    _store, runner = new_session(tmp_path, repo, scripted([Turn(error="authentication_failed")]))
    state = runner.run()
    assert state.status == "error" and state.finished is not None
    assert "authentication_failed" in state.finished.reason


def test_context_window_error_stops_cleanly(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    script = [turn(call("read_file", path="calc.py")), Turn(error="context_window_exceeded")]
    _store, runner = new_session(tmp_path, repo, scripted(script))
    assert runner.run().status == "context_overflow"


# Search, write a new file, then look up the name it defines.
WRITE_THEN_FIND = [
    turn(call("search_code", query="calc add")),
    turn(call("write_file", path="geometry.py",
              content="def hypotenuse_length(a, b):\n    return (a * a + b * b) ** 0.5\n")),
    turn({"name": "find_symbol", "arguments": {"name": "hypotenuse_length"}}),
    turn(call("finish", summary="added")),
]


def test_a_file_written_by_the_agent_is_searchable_at_once(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    store, runner = new_session(tmp_path, repo, scripted(list(WRITE_THEN_FIND)))
    runner.run()
    found = next(e.event for e in store.read(runner.session_id)
             if e.event.type == "tool_call_finished" and e.event.name == "find_symbol")
    assert found.ok and "geometry.py" in found.output  # type: ignore[union-attr]


def test_a_file_written_while_the_index_is_still_being_finished_is_searchable_at_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The index is open (searchable) before its thread has finished with it; an edit made
    # in between must reach it, not wait for a sweep seconds later.
    release = threading.Event()
    real_share = warmup_module.share_with_seed

    def held_share(index: RepoIndex, cache: Path) -> None:
        release.wait(60)
        real_share(index, cache)

    monkeypatch.setattr(warmup_module, "share_with_seed", held_share)
    repo = make_repo(tmp_path)
    model = scripted(list(WRITE_THEN_FIND))
    store, runner = new_session(tmp_path, repo, model,
                                Settings(sandbox=True, verify_on_finish=False))
    try:
        runner.run()
    finally:
        release.set()
    finished = [e.event for e in store.read(runner.session_id)
                if e.event.type == "tool_call_finished"]
    assert finished[0].ok, "search_code answered from the open index"  # type: ignore[union-attr]
    found = next(e for e in finished if e.name == "find_symbol")  # type: ignore[union-attr]
    assert found.ok and "geometry.py" in found.output  # type: ignore[union-attr]
