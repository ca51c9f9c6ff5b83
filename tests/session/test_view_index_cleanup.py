"""A session's run leaves no index of its workspace's view behind; the repository's stays."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codeloop.cli import main
from codeloop.index import store
from codeloop.index.registry import open_index
from codeloop.session.cleanup import end_run
from tests.cli.test_cli import cli
from tests.session.helpers import call, make_repo, new_session, scripted, turn

SEARCH_THEN_FINISH = [
    turn(call("search_code", query="add")),
    turn(call("edit_file", path="calc.py", old="return a - b", new="return a + b")),
    turn(call("finish", summary="add() adds now")),
]


def _index_roots(cache: Path) -> set[str]:
    roots = set()
    for directory in store.index_dirs(cache):
        origin = store.read_origin(directory)
        assert origin is not None, directory
        roots.add(origin.root)
    return roots


def test_ending_a_run_deletes_the_view_index_only(tmp_path: Path, index_cache_dir: Path) -> None:
    repo = make_repo(tmp_path)
    _store, runner = new_session(tmp_path, repo, scripted(SEARCH_THEN_FINISH))
    state = runner.run()
    assert state.status == "finished"
    view = runner.ctx.workspace.path
    assert _index_roots(index_cache_dir) == {str(repo), str(view)}

    end_run(runner.ctx)
    assert _index_roots(index_cache_dir) == {str(repo)}
    assert "index" not in runner.ctx.services
    # The session's changes are untouched, and a resumed run gets a working index again.
    assert "+    return a + b" in runner.ctx.workspace.diff()
    hits = open_index(view, seed=repo).search("add")
    assert hits and hits[0].text.strip().endswith("return a + b")


def test_discard_deletes_the_view_index(tmp_path: Path, index_cache_dir: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODELOOP_DATA_DIR", str(tmp_path / "data"))
    repo = make_repo(tmp_path)
    _store, runner = new_session(tmp_path, repo, scripted(SEARCH_THEN_FINISH))
    runner.run()
    assert str(runner.ctx.workspace.path) in _index_roots(index_cache_dir)
    assert main(["discard", runner.session_id]) == 0
    assert _index_roots(index_cache_dir) == {str(repo)}
    assert runner.ctx.workspace.diff() == ""


@pytest.mark.slow
def test_codeloop_run_leaves_only_the_repository_index(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"tool_calls": t.tool_calls} for t in SEARCH_THEN_FINISH]))
    cache = tmp_path / "cache"
    out = cli(tmp_path, "run", "fix add", "--repo", str(repo), "--model", f"scripted:{script}",
              "--json", CODELOOP_CACHE_DIR=str(cache))
    assert out.returncode == 0, out.stderr
    found = [json.loads(line) for line in out.stdout.splitlines()
             if '"search_code"' in line and '"tool_call_finished"' in line]
    assert found and found[0]["ok"], "the run must have used (and so made) the view's index"
    assert _index_roots(cache) == {str(repo)}
