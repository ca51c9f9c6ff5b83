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


HOG = "import time; x = b'\\x07' * (200 << 20); print('held', flush=True); time.sleep(30)"


def test_a_command_stopped_by_a_session_limit_says_which_setting_raises_it(
        tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    settings = load_settings(repo, {}, env={"CODELOOP_DATA_DIR": str(tmp_path / "data")},
                             user_file=tmp_path / "none.toml")
    settings = settings.model_copy(update={
        "verify_on_finish": False,
        "limits": settings.limits.model_copy(update={"memory_mb": 300}),
        "budgets": settings.budgets.model_copy(update={"command_timeout_s": 3.0})})
    # Two processes of 200 MB each: under the per-process limit, over the whole command's.
    hogs = f'python3 -c "{HOG}" & python3 -c "{HOG}" & wait'
    script = [
        turn(call("run", "memory", command=hogs)),
        turn(call("run", "slow", command="sleep 20")),
        turn(call("run", "own", command="sleep 20", timeout=1)),
        turn(call("finish", summary="hit the limits")),
    ]
    store, runner = new_session(tmp_path, repo, scripted(script), cfg=settings)
    assert runner.run().status == "finished"
    out = {e.event.call_id: e.event.output for e in store.read(runner.session_id)
           if isinstance(e.event, ToolCallFinished)}
    assert "memory limit (300 MB for the whole command) exceeded" in out["memory"]
    assert "raise [limits] memory_mb in their config" in out["memory"]
    assert "timed out after 3s" in out["slow"]
    assert "raise budgets.command_timeout_s in their config" in out["slow"]
    # A shorter timeout the model chose itself is not the session's limit.
    assert "timed out after 1s" in out["own"] and "[limits]" not in out["own"]
