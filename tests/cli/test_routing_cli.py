"""`[models]` from the command line: a run with a planner and a coder model, then `show` and
`export` split tokens and cost by model and role."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.test_cli import cli
from tests.llm.fake_server import FakeProvider, Reply, openai_stream
from tests.session.helpers import make_repo

USAGE = (1000, 100, 0)


def replies() -> list[Reply]:
    edit = json.dumps({"path": "calc.py", "old": "return a - b", "new": "return a + b"})
    return [Reply(sse=openai_stream("", [("c1", "read_file", '{"path": "calc.py"}')], USAGE)),
            Reply(sse=openai_stream("", [("c2", "edit_file", edit)], USAGE)),
            Reply(sse=openai_stream("", [("c3", "finish", '{"summary": "fixed add"}')], USAGE))]


def test_show_and_export_split_tokens_and_cost_by_model_and_role(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    fake = FakeProvider(replies=replies()).start()
    config = tmp_path / "config" / "codeloop" / "config.toml"
    config.parent.mkdir(parents=True)
    url = fake.url + "/v1"
    config.write_text("verify_on_finish = false\n[models]\n"
                      f'planner = {{model = "openai:gpt-4.1", base_url = "{url}"}}\n'
                      f'coder = {{model = "openai:gpt-4o", base_url = "{url}"}}\n')
    try:
        out = cli(tmp_path, "run", "make the tests pass", "--repo", str(repo),
                  OPENAI_API_KEY="sk-test")
    finally:
        fake.stop()
    assert out.returncode == 0, out.stderr + out.stdout
    # Exploring and the first edit are planning (no plan, nothing edited); then coding.
    assert [r["json"]["model"] for r in fake.requests] == ["gpt-4.1", "gpt-4.1", "gpt-4o"]
    assert "model openai:gpt-4o for coding (coder)" in out.stdout

    sid = json.loads(cli(tmp_path, "sessions", "--json").stdout)[0]["id"]
    shown = cli(tmp_path, "show", sid).stdout
    table = shown[shown.index("by model and role"):]
    cells = [[c.strip() for c in line.strip("│ ").split("│")]
             for line in table.splitlines() if "gpt-4" in line]
    # gpt-4.1 at $2 / $8 per million tokens, gpt-4o at $2.50 / $10 (llm/pricing.py):
    # (2,000 × 2 + 200 × 8) / 1e6 and (1,000 × 2.5 + 100 × 10) / 1e6.
    assert cells == [["gpt-4.1", "planner", "2", "2,000", "200", "$0.0056"],
                     ["gpt-4o", "coder", "1", "1,000", "100", "$0.0035"]]

    doc = json.loads(cli(tmp_path, "export", sid).stdout)
    rows = {(r["model"], r["role"]): r for r in doc["summary"]["by_model"]}
    assert set(rows) == {("gpt-4.1", "planner"), ("gpt-4o", "coder")}
    assert rows[("gpt-4.1", "planner")]["calls"] == 2
    assert rows[("gpt-4o", "coder")]["cost_usd"] == 0.0035
