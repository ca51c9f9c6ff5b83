"""A `read(...)` deny rule hides the file from every tool that walks many files, not only read_file."""

from __future__ import annotations

from pathlib import Path

from codeloop.config import Settings
from codeloop.llm.scripted import ScriptedModel
from codeloop.session.runner import Runner
from tests.session.helpers import git, index_built, make_repo, new_session

SECRET = "hunter2_token_value"


def _runner(tmp_path: Path, deny: list[str]) -> Runner:
    repo = make_repo(tmp_path)
    (repo / ".env").write_text(f"API_TOKEN={SECRET}\n")
    (repo / "config").mkdir()
    (repo / "config" / "secrets.py").write_text(f"def api_token():\n    return '{SECRET}'\n")
    git(repo, "add", "-A", "-f")
    git(repo, "commit", "-qm", "secrets")
    cfg = Settings(sandbox=True, permissions={"deny": deny})
    _, runner = new_session(tmp_path, repo, ScriptedModel([], name="scripted"), cfg)
    # Else find_symbol may answer from a partial index, and "not found" proves nothing.
    index_built(runner)
    return runner


def _output(runner: Runner, tool: str, **args: object) -> str:
    spec = runner.registry.get(tool)
    obs = spec.run(spec.args_model.model_validate(args), runner.ctx)
    assert obs.ok, obs.error
    return obs.output


def test_denied_files_are_hidden_from_grep_listing_and_search(tmp_path: Path) -> None:
    runner = _runner(tmp_path, ["read(./.env)", "read(config/**)"])
    assert SECRET not in _output(runner, "grep", pattern="hunter2")
    listing = _output(runner, "list_files", depth=3)
    assert "calc.py" in listing and ".env" not in listing and "secrets.py" not in listing
    assert SECRET not in _output(runner, "search_code", query="api token")
    assert "secrets.py" not in _output(runner, "find_symbol", name="api_token")
    # Nor is a name defined only there suggested for a near miss.
    assert "api_token" not in _output(runner, "find_symbol", name="api_tokn")


def test_without_a_deny_rule_the_same_files_are_found(tmp_path: Path) -> None:
    runner = _runner(tmp_path, [])
    assert SECRET in _output(runner, "grep", pattern="hunter2")
    assert "config/secrets.py" in _output(runner, "find_symbol", name="api_token")
    assert "Did you mean: api_token" in _output(runner, "find_symbol", name="api_tokn")
