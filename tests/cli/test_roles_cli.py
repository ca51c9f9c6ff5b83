"""A session with roles from the command line: the live output and `show` name the plan's
steps and their status, the reviewer's verdicts and each role's share of the budgets."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.test_cli import cli
from tests.session.helpers import make_repo
from tests.session.test_roles_review import REVIEW_SCRIPT


def test_run_and_show_a_session_with_roles(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"text": t.text, "tool_calls": t.tool_calls}
                                  for t in REVIEW_SCRIPT]))
    config = tmp_path / "config" / "codeloop" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text("verify_on_finish = false\n[roles]\nenabled = true\n")
    out = cli(tmp_path, "run", "make the tests pass", "--repo", str(repo),
              "--model", f"scripted:{script}")
    assert out.returncode == 0, out.stderr + out.stdout
    live = out.stdout
    assert "plan progress (loop): fix → in_progress" in live
    assert "review 1 requested" in live and "reviewer send back: " in live
    assert "reviewer approve" in live

    sid = json.loads(cli(tmp_path, "sessions", "--json").stdout)[0]["id"]
    shown = cli(tmp_path, "show", sid).stdout
    plan = shown[shown.index("plan (revision 0)"):]
    step = next(line for line in plan.splitlines() if "Make add() add" in line)
    assert "●" in step and "fix" in step  # the step is done
    budgets = shown[shown.index("budgets by role"):]
    rows = {cells[0]: cells for cells in ([c.strip() for c in line.strip("│ ").split("│")]
                                          for line in budgets.splitlines()[:9])
            if cells and cells[0] in ("planner", "coder", "reviewer", "explorer")}
    # 50 steps: the planner and the reviewer a quarter each, the coder all of them.
    assert rows["planner"][1] == "1 / 12" and rows["reviewer"][1] == "4 / 12"
    assert rows["coder"][1] == "4 / 50" and rows["explorer"][1] == "0 / 12"
    doc = json.loads(cli(tmp_path, "export", sid).stdout)
    exported = {r["name"]: r for r in doc["summary"]["role_budgets"]}
    assert exported["reviewer"]["turns"] == 4 and exported["reviewer"]["turn_limit"] == 12

    # A replay of the export takes the same turns through the same roles.
    exported_file = tmp_path / "roles.json"
    exported_file.write_text(json.dumps(doc))
    again = cli(tmp_path, "replay", str(exported_file), "--json")
    assert again.returncode == 0, again.stderr + again.stdout
    kinds = [json.loads(line)["type"] for line in again.stdout.splitlines()
             if line.startswith("{")]
    assert kinds.count("review_given") == 2 and kinds[-1] == "session_finished"
