"""`[limits]` reaches every sandboxed command of a session: the agent's and the verifier's."""

from __future__ import annotations

from pathlib import Path

from codeloop.config import load_settings
from codeloop.events import ToolCallFinished
from tests.session.helpers import call, make_repo, new_session, scripted, turn

LIMITS = '[limits]\nmax_open_files = 300\nmemory_mb = 3000\n'
SHOW = "echo files=$(ulimit -n) memory_kb=$(ulimit -v)"


def _outputs(tmp_path: Path, repo: Path, user_file: Path) -> dict[str, str]:
    settings = load_settings(repo, {}, env={"CODELOOP_DATA_DIR": str(tmp_path / "data")},
                             user_file=user_file)
    settings = settings.model_copy(update={"verify": {"test": f"sh -c '{SHOW} > limits.txt'"}})
    script = [
        turn(call("run", "a", command=SHOW)),
        turn(call("run_tests", "b")),
        turn(call("read_file", "c", path="limits.txt")),
        turn(call("finish", summary="looked at the limits")),
    ]
    store, runner = new_session(tmp_path, repo, scripted(script), cfg=settings)
    assert runner.run().status == "finished"
    return {e.event.call_id: e.event.output for e in store.read(runner.session_id)
            if isinstance(e.event, ToolCallFinished)}


def test_the_users_limits_bind_the_agents_and_the_verifiers_commands(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    user = tmp_path / "user.toml"
    user.write_text(LIMITS)
    out = _outputs(tmp_path, repo, user)
    assert "files=300 memory_kb=3072000" in out["a"]
    assert "files=300 memory_kb=3072000" in out["c"]


def test_an_untrusted_project_may_lower_a_limit_but_not_raise_one(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    (repo / ".codeloop").mkdir()
    (repo / ".codeloop" / "config.toml").write_text(
        "[limits]\nmax_open_files = 200\nmemory_mb = 999999\n")
    user = tmp_path / "user.toml"
    user.write_text(LIMITS)
    out = _outputs(tmp_path, repo, user)
    assert "files=200 memory_kb=3072000" in out["a"]
    assert "files=200 memory_kb=3072000" in out["c"]
