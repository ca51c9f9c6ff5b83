"""Explorers: two started in one coder turn run at the same time, each with its own context,
and both summaries reach the coder; their tokens and cost count in the session's."""

from __future__ import annotations

import threading
from pathlib import Path

from codeloop.events import (
    AuxiliaryModelCall,
    ExplorerFinished,
    ExplorerStarted,
    SubagentToolCall,
    ToolCallFinished,
)
from codeloop.llm.router import ROLES, RoleModels, Router
from codeloop.llm.scripted import ScriptedModel
from codeloop.llm.types import Completion, DeltaCallback, ModelRequest
from codeloop.session.setup import build_runner, open_store, start_session
from codeloop.session.state import fold, summary_dict
from tests.planner.helpers import Recording
from tests.session.helpers import call, make_repo, turn
from tests.session.roles_helpers import edit, events_of, propose, roles_settings

WHERE = "where is add defined"
TESTED = "how is add tested"
EXPLORER_SCRIPTS = {
    WHERE: [turn(call("grep", pattern="def add")),
            turn(text="add() is defined at calc.py:1 and subtracts (calc.py:2).")],
    TESTED: [turn(call("read_file", path="tests/test_calc.py")),
             turn(text="tests/test_calc.py:6 checks add(2, 3) == 5.")],
}
MAIN_SCRIPT = [
    propose("p1", {"id": "fix", "title": "Make add() add", "files": ["calc.py"]}),
    turn(call("explore", question=WHERE), call("explore", question=TESTED)),
    turn(edit("return a - b", "return a + b")),
    turn(call("finish", summary="add() adds")),
]


class Explorers:
    """The explorer role's model: a script per question; each explorer's first turn waits at
    a barrier for the other's, so the test passes only if the two run at the same time."""

    name = "scripted-explorers"

    def __init__(self) -> None:
        self.models = {q: ScriptedModel(t, name="explorer") for q, t in
                       EXPLORER_SCRIPTS.items()}
        self.barrier = threading.Barrier(2, timeout=20)
        self.seen: list[ModelRequest] = []

    def complete(self, request: ModelRequest, on_delta: DeltaCallback | None = None
                 ) -> Completion:
        self.seen.append(request)
        question = request.messages[1].content
        if request.step == 0:
            self.barrier.wait()
        return self.models[question].complete(request, on_delta)


def test_two_explorers_run_concurrently_and_both_summaries_reach_the_coder(
        tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    cfg = roles_settings(review=False)
    coder = Recording(MAIN_SCRIPT)
    explorers = Explorers()
    models = RoleModels({**{role: (coder,) for role in ROLES}, "explorer": (explorers,)})
    store = open_store(tmp_path / "data")
    sid = start_session(store, "make the tests pass", repo, cfg, coder.name)
    runner = build_runner(store, sid, repo, cfg, coder, base_dir=tmp_path / "data",
                          router=Router(models))
    state = runner.run()
    assert state.status == "finished", state.finished
    started = {e.question: e for e in events_of(store, sid, ExplorerStarted)}
    finished = {e.subagent: e for e in events_of(store, sid, ExplorerFinished)}
    assert set(started) == {WHERE, TESTED} and all(f.ok for f in finished.values())
    # Overlap: each started before the other finished.
    a, b = (started[WHERE], started[TESTED])
    assert a.ts < finished[b.subagent].ts and b.ts < finished[a.subagent].ts
    # Each explorer had its own context: its question only, never the coder's conversation.
    assert all(len(r.messages) <= 4 and "make the tests pass" not in r.messages[1].content
               for r in explorers.seen)
    assert {t.name for t in explorers.seen[0].tools}.isdisjoint({"edit_file", "run", "explore"})
    # Both summaries reached the coder, as the results of its two explore calls.
    results = [e for e in events_of(store, sid, ToolCallFinished) if e.name == "explore"]
    assert [r.ok for r in results] == [True, True]
    shown = "\n".join(m.content for m in coder.requests[2].messages)
    assert "calc.py:1" in shown and "tests/test_calc.py:6" in shown
    assert len(events_of(store, sid, SubagentToolCall)) == 2
    # Tokens and cost roll up: the explorers' calls are in the session's totals.
    calls = [e for e in events_of(store, sid, AuxiliaryModelCall) if e.purpose == "explore"]
    assert len(calls) == 4 and {c.subagent for c in calls} == set(finished)
    folded = fold(store.read(sid))
    explorer_tokens = sum(c.usage.input_tokens + c.usage.output_tokens for c in calls)
    assert sum(f.input_tokens + f.output_tokens for f in finished.values()) == explorer_tokens
    rows = summary_dict(folded)["by_model"]
    assert any(r["role"] == "explorer" and r["calls"] == 4 for r in rows)
    assert folded.total_tokens >= explorer_tokens + sum(
        r["input_tokens"] + r["output_tokens"] for r in rows if r["role"] != "explorer")
