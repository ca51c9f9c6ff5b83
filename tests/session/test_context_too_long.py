"""A provider's context-too-long answer in a session: the conversation is compacted (a
`Compacted` event), the same model is asked once more, and only then does the call move to
the next model of the chain, with the compacted request."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from codeloop.config import Settings
from codeloop.config_tables import MemorySettings
from codeloop.llm.openai_provider import OpenAIModel
from codeloop.llm.router import ROLES, RoleModels, Router
from codeloop.llm.scripted import ScriptedModel, Turn
from codeloop.session.setup import build_runner, open_store, start_session
from tests.llm.fake_server import FakeProvider, Reply, openai_error, openai_stream
from tests.session.helpers import make_repo

TOO_LONG = openai_error(
    400, "This model's maximum context length is 4500 tokens. However, your messages resulted "
         "in 9120 tokens. Please reduce the length of the messages.", "context_length_exceeded")


@pytest.fixture
def servers() -> Iterator[tuple[FakeProvider, FakeProvider]]:
    primary, backup = FakeProvider().start(), FakeProvider().start()
    yield primary, backup
    primary.stop()
    backup.stop()


def oai(server: FakeProvider, name: str) -> OpenAIModel:
    return OpenAIModel(name, api_key="k", base_url=server.url + "/v1", max_retries=1,
                       retry_base_delay=0.01, timeout_s=5)


def tool_turn(cid: str, name: str, **args: object) -> Reply:
    return Reply(sse=openai_stream("", [(cid, name, json.dumps(args))]))


@pytest.mark.parametrize("second_try_fits", [True, False], ids=["retry", "fallback"])
def test_too_long_compacts_retries_once_then_falls_back(
        tmp_path: Path, servers: tuple[FakeProvider, FakeProvider], second_try_fits: bool
) -> None:
    primary, backup = servers
    repo = make_repo(tmp_path)
    (repo / "big.txt").write_text("".join(f"line {n} of a long file\n" for n in range(1200)))
    primary.replies += [
        tool_turn("r1", "read_file", path="big.txt", start_line=1, end_line=400),
        tool_turn("r2", "read_file", path="big.txt", start_line=401, end_line=800),
        tool_turn("r3", "read_file", path="calc.py"),
        tool_turn("r4", "read_file", path="tests/test_calc.py"),
        tool_turn("r5", "list_files", path="."), TOO_LONG]
    finish = tool_turn("c3", "finish", summary="done")
    if second_try_fits:
        primary.replies.append(finish)
    else:
        primary.replies.append(TOO_LONG)
        backup.replies.append(finish)
    chain = (oai(primary, "gpt-primary"), oai(backup, "gpt-backup"))
    summariser = ScriptedModel([Turn(text="SUMMARY: big.txt was read")] * 5, name="small")
    router = Router(RoleModels({role: (summariser,) if role == "small" else chain
                                for role in ROLES}))
    # The window the provider names is tight: the tools are the loop's own (memory's
    # remember/recall would take the room compaction needs).
    cfg = Settings(verify_on_finish=False, context_tokens=200, context_wait_s=60,
                   memory=MemorySettings(enabled=False))
    store = open_store(tmp_path / "data")
    sid = start_session(store, "fix add() in calc.py", repo, cfg, "gpt-primary")
    model = chain[0]
    state = build_runner(store, sid, repo, cfg, model, base_dir=tmp_path / "data",
                         router=router).run()
    assert state.status == "finished", state.finished
    kinds = [e.event.type for e in store.read(sid)]
    last = [i for i, k in enumerate(kinds) if k == "model_call_started"][5]
    after = kinds[last:]
    # Compacted before anything moves; the same model asked again with the smaller request.
    assert after.index("compacted") < after.index("model_call_finished")
    sent = [len(json.dumps(r["json"]["messages"])) for r in primary.requests]
    assert len(primary.requests) == 7 and sent[6] < sent[5] // 2
    assert "SUMMARY: big.txt was read" in json.dumps(primary.requests[6]["json"]["messages"])
    if second_try_fits:
        assert "model_fell_back" not in kinds and backup.requests == []
    else:
        assert after.index("compacted") < after.index("model_fell_back")
        fell = next(e.event for e in store.read(sid) if e.event.type == "model_fell_back")
        assert (fell.from_model, fell.to_model, fell.cause) == (  # type: ignore[union-attr]
            "openai:gpt-primary", "openai:gpt-backup", "context_window_exceeded")
        # The next model gets the compacted request, not the one that was too long.
        assert len(backup.requests) == 1
        assert len(json.dumps(backup.requests[0]["json"]["messages"])) == sent[6]
