"""Why the model saw what it saw: a run's task context reaches the provider, `show` says what
went in and what it cost, and `export` has the whole `context_built` event."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.test_cli import cli
from tests.llm.fake_server import FakeProvider, Reply, openai_stream
from tests.session.helpers import make_repo


def test_show_and_export_say_what_the_task_context_held(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    config = tmp_path / "config" / "codeloop" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text("context_wait_s = 60\n")  # a loaded machine must not start without it
    fake = FakeProvider(replies=[
        Reply(sse=openai_stream("", [("c1", "finish", '{"summary": "looked"}')]))]).start()
    try:
        out = cli(tmp_path, "run", "add() in calc.py subtracts", "--repo", str(repo),
                  "--model", "openai:gpt-4o", "--base-url", fake.url + "/v1",
                  OPENAI_API_KEY="sk-test", CODELOOP_EMBEDDINGS="0")
    finally:
        fake.stop()
    assert out.returncode == 0, out.stderr + out.stdout
    sent = json.dumps(fake.requests[0]["json"]["messages"])
    assert "# Code context for the task" in sent and "def add(a, b)" in sent

    sid = json.loads(cli(tmp_path, "sessions", "--json").stdout)[0]["id"]
    shown = cli(tmp_path, "show", sid).stdout
    line = next(x for x in shown.splitlines() if x.startswith("context (task)"))
    assert "snippets from calc.py" in line and "built in" in line

    doc = json.loads(cli(tmp_path, "export", sid).stdout)
    [built] = [e for e in doc["events"] if e["type"] == "context_built"]
    assert built["phase"] == "task" and built["tokens"] > 0
    assert {"path": "calc.py", "kind": "snippet"}.items() <= next(
        s for s in built["spans"] if s["kind"] == "snippet").items()
    # The exported request is the one the provider got, context included.
    assert doc["requests"][0]["messages"][2]["content"] == built["text"]
