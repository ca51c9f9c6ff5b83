"""Plans from the command line: `run --json` emits the proposal and stops waiting; `resume`
without anyone to answer keeps waiting; `show` draws the plan as a table."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.test_cli import cli
from tests.planner.helpers import WORK, propose
from tests.server.conftest import write_script
from tests.session.helpers import make_repo


def test_run_json_stops_at_the_plan_and_resume_keeps_waiting(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    script = write_script(tmp_path / "plan.json", [propose("p1"), *WORK])
    out = cli(tmp_path, "run", "make the tests pass", "--repo", str(repo), "--json",
              "--plan-approval", "--model", f"scripted:{script}")
    assert out.returncode == 6, out.stderr
    events = [json.loads(line) for line in out.stdout.splitlines()]
    proposed = next(e for e in events if e["type"] == "plan_proposed")
    assert proposed["needs_approval"] is True
    assert [s["id"] for s in proposed["steps"]] == ["read", "fix", "test"]
    assert events[-1]["type"] == "approval_requested" and events[-1]["call_id"] == "p1"
    sid = events[0]["session_id"]

    again = cli(tmp_path, "resume", sid, "--json")
    assert again.returncode == 6, again.stderr
    assert again.stdout.strip() == "", "nothing is appended while the plan waits"

    shown = cli(tmp_path, "show", sid)
    assert shown.returncode == 0, shown.stderr
    assert "plan proposed (needs approval)" in shown.stdout
    assert "Make add() add" in shown.stdout and "read" in shown.stdout
