"""Prompt caching survives routing: a compaction summary made by the small model in between
leaves the coder's cached prefix (tools, system prompt, repo map and task) byte-identical."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from codeloop.config import Settings
from codeloop.events import AuxiliaryModelCall, Compacted
from tests.llm.fake_server import FakeProvider, Reply, anthropic_stream, openai_message
from tests.session.helpers import make_repo
from tests.session.test_routing_in_loop import runner_for, start

READS = 14


@pytest.fixture
def servers() -> Iterator[tuple[FakeProvider, FakeProvider]]:
    coder, small = FakeProvider().start(), FakeProvider().start()
    yield coder, small
    coder.stop()
    small.stop()


def cached_prefix(body: dict[str, Any]) -> str:
    """What Anthropic caches of a request: tools, system, then the first turn's blocks up to
    its last cache breakpoint, as the bytes that were sent."""
    head = body["messages"][0]["content"]
    last = max(i for i, block in enumerate(head) if "cache_control" in block)
    return json.dumps([body["tools"], body["system"], head[: last + 1]])


def test_the_coders_prefix_is_the_same_bytes_across_a_small_model_call(
        tmp_path: Path, servers: tuple[FakeProvider, FakeProvider]) -> None:
    coder, small = servers
    repo = make_repo(tmp_path)
    (repo / "big.txt").write_text("".join(f"line {n} of a long file\n" for n in range(1500)))
    for n in range(READS):
        args = json.dumps({"path": "big.txt", "start_line": 1 + 60 * n, "end_line": 60 * n + 90})
        coder.replies.append(Reply(sse=anthropic_stream("", [(f"r{n}", "read_file", args)])))
    coder.replies.append(Reply(sse=anthropic_stream("", [("f", "finish",
                                                          '{"summary": "read it all"}')])))
    small.replies += [Reply(body=openai_message("SUMMARY: big.txt read in pieces"))] * READS
    settings = Settings(api_key="k", max_retries=0, context_window=8000, max_output_tokens=500,
                        verify_on_finish=False, models={
                            "coder": {"model": "anthropic:claude-sonnet-4", "base_url": coder.url},
                            "small": {"model": "openai:gpt-4.1-mini",
                                      "base_url": small.url + "/v1"}})
    store, sid = start(tmp_path, repo, settings)
    state = runner_for(store, sid, repo, tmp_path / "data").run()
    assert state.status == "finished", state.finished

    log = [s.event for s in store.read(sid)]
    summaries = [e for e in log if isinstance(e, AuxiliaryModelCall)]
    assert summaries and all(e.role == "small" and e.model == "gpt-4.1-mini" for e in summaries)
    assert len(small.requests) == len(summaries)
    first_compaction = next(i for i, e in enumerate(log) if isinstance(e, Compacted))
    turns_before = sum(1 for e in log[:first_compaction] if e.type == "model_call_finished")
    assert 0 < turns_before < len(coder.requests)  # coder calls before and after the summary

    prefixes = {cached_prefix(r["json"]) for r in coder.requests}
    assert len(prefixes) == 1, "the coder's cached prefix changed between its calls"
    body = coder.requests[-1]["json"]
    assert body["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    assert "SUMMARY: big.txt read in pieces" in json.dumps(body["messages"])
