"""The approval prompt at a real terminal: legible choices, an edit shown as its coloured diff,
and the answer bound to the raw call even when its text had to be shown escaped."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from codeloop.policy.engine import approval_digest
from tests.cli.pty_driver import Screen, run_in_pty
from tests.cli.test_cli import cli
from tests.session.helpers import make_repo

SGR = re.compile(r"\x1b\[[0-9;]*m")
CR_COMMAND = "echo one\recho two"


@dataclass
class Asked:
    live: Screen
    events: list[dict[str, object]]

    def prompt(self, n: int) -> str:
        """The n-th approval as the person reads it: from its panel to the question."""
        text = SGR.sub("", self.live.prompts[n].decode())
        return text[text.index("approve "):]


@pytest.fixture(scope="module")
def asked(tmp_path_factory: pytest.TempPathFactory) -> Asked:
    tmp = tmp_path_factory.mktemp("approval")
    repo = make_repo(tmp)
    script = tmp / "script.json"
    script.write_text(json.dumps([
        {"tool_calls": [{"name": "propose_plan", "arguments": {
            "summary": "fix add", "steps": [{"id": "s1", "title": "fix the sign"}]}}]},
        {"tool_calls": [{"name": "edit_file", "arguments": {
            "path": "calc.py", "old": "return a - b", "new": "return a + b"}}]},
        {"tool_calls": [{"name": "write_file", "arguments": {
            "path": "notes/new.txt", "content": "first line\nsecond line\n"}}]},
        {"tool_calls": [{"name": "edit_file", "arguments": {
            "path": "calc.py", "old": "this text is nowhere", "new": "x"}}]},
        {"tool_calls": [{"name": "run", "arguments": {"command": CR_COMMAND}}]},
        {"tool_calls": [{"name": "finish", "arguments": {"summary": "fixed"}}]},
    ]))
    live = run_in_pty(tmp, "run", "fix add", "--repo", str(repo), "--model",
                      f"scripted:{script}", "--approval-mode", "ask",
                      answers=("y", "y", "y", "y", "y"))
    assert live.code == 0, live.text[-3000:] + live.err.decode()
    sid = json.loads(cli(tmp, "sessions", "--json").stdout)[0]["id"]
    shown = cli(tmp, "show", sid, "--json")
    return Asked(live, [json.loads(line) for line in shown.stdout.splitlines()])


def test_the_choices_are_legible(asked: Asked) -> None:
    assert asked.prompt(1).rstrip().endswith("[y]es / [n]o / [a]lways allow this / [p]ause (y):")
    assert "es, o," not in asked.live.text


def test_a_plan_approval_says_what_always_means_there(asked: Asked) -> None:
    prompt = asked.prompt(0)
    assert "approve plan?" in prompt and "fix the sign" in prompt
    assert prompt.rstrip().endswith(
        "[y]es / [n]o / [a]pprove and stop asking about plans / [p]ause (y):")


def test_an_edit_approval_shows_its_coloured_diff_not_json(asked: Asked) -> None:
    prompt = asked.prompt(1)
    assert "approve edit_file?" in prompt
    assert "-    return a - b" in prompt and "+    return a + b" in prompt
    assert '"old"' not in prompt and '"new"' not in prompt
    raw = asked.live.prompts[1].decode()
    removed = re.search(r"\x1b\[([0-9;]+)m-    return a - b", raw)
    added = re.search(r"\x1b\[([0-9;]+)m\+    return a \+ b", raw)
    assert removed and added and removed.group(1) != added.group(1)  # two colours


def test_the_diff_is_computed_without_writing(asked: Asked) -> None:
    edits = [e for e in asked.events if e["type"] == "file_edited"]
    # Each file was edited once, after its approval: the preview wrote nothing.
    assert [e["path"] for e in edits] == ["calc.py", "notes/new.txt"]
    given = [e for e in asked.events if e["type"] in ("approval_given", "file_edited")]
    assert [e["type"] for e in given][:4] == ["approval_given", "approval_given", "file_edited",
                                              "approval_given"]


def test_a_new_file_is_shown_as_added_lines(asked: Asked) -> None:
    prompt = asked.prompt(2)
    assert "approve write_file?" in prompt and "new file mode 100644" in prompt
    assert "+first line" in prompt and "+second line" in prompt


def test_an_edit_that_cannot_apply_shows_why_and_its_arguments(asked: Asked) -> None:
    prompt = asked.prompt(3)
    assert "cannot show the change:" in prompt
    assert '"old": "this text is nowhere"' in prompt


def test_an_approved_command_runs_exactly_as_asked_though_shown_escaped(asked: Asked) -> None:
    prompt = asked.prompt(4)
    assert "approve run?" in prompt and "echo one⟨CR⟩echo two" in prompt
    assert "\r" not in asked.live.out.decode().replace("\r\n", "\n")
    request = next(e for e in asked.events
                   if e["type"] == "approval_requested" and e["name"] == "run")
    assert request["digest"] == approval_digest("run", {"command": CR_COMMAND, "timeout": None})
    ran = next(e for e in asked.events if e["type"] == "command_ran")
    assert ran["command"] == CR_COMMAND and ran["exit_code"] == 0
    finished = next(e for e in asked.events if e["type"] == "tool_call_finished"
                    and e["name"] == "run")
    assert finished["ok"] is True


def test_without_a_terminal_nobody_is_asked(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"tool_calls": [{"name": "run", "arguments": {
        "command": "echo hi"}}]}]))
    out = cli(tmp_path, "run", "x", "--repo", str(repo), "--model", f"scripted:{script}",
              "--approval-mode", "ask", "--no-plan-approval")
    assert "[p]ause" not in out.stdout and "waiting for approval" in out.stdout
