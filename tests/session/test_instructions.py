"""AGENTS.md files from the root down to the working directory go into the system prompt."""

from __future__ import annotations

from pathlib import Path

from codeloop.memory.instructions import repository_instructions
from codeloop.session.state import fold
from tests.session.helpers import make_repo, new_session, scripted


def test_agents_md_chain_outermost_first(tmp_path: Path) -> None:
    repo = tmp_path / "r"
    (repo / "pkg" / "sub").mkdir(parents=True)
    (repo / "AGENTS.md").write_text("Use tabs.")
    (repo / "pkg" / "AGENTS.md").write_text("Package rule.")
    (repo / "pkg" / "sub" / "AGENTS.md").write_text("Sub rule.")
    (repo / "other").mkdir()
    (repo / "other" / "AGENTS.md").write_text("Not on the path.")
    found = repository_instructions(repo, repo / "pkg" / "sub")
    assert [(f.source, f.text) for f in found] == [
        ("AGENTS.md", "Use tabs."), ("pkg/AGENTS.md", "Package rule."),
        ("pkg/sub/AGENTS.md", "Sub rule.")]
    assert not any(f.trusted for f in found)


def test_instructions_reach_the_model(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    (repo / "AGENTS.md").write_text("Always run the tests with unittest.")
    store, runner = new_session(tmp_path, repo, scripted([]))
    started = fold(store.read(runner.session_id)).started
    assert started is not None
    assert "Always run the tests with unittest." in started.system_prompt
