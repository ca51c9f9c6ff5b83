"""Routing in the real loop: scripted models per role, set up through `[models]` as a user
would, in a real repository with the real verifier; events, fallback, escalation, resume."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

from codeloop.config import Settings
from codeloop.events import (
    AuxiliaryModelCall,
    Event,
    ModelCallFinished,
    ModelFellBack,
    ModelRouted,
    StoredEvent,
)
from codeloop.llm.roles import make_role_models, make_router
from codeloop.llm.scripted import Turn
from codeloop.session.control import Control
from codeloop.session.resume import session_settings
from codeloop.session.runner import Runner
from codeloop.session.setup import RuntimeParts, build_runner, open_store, start_session
from codeloop.session.state import fold, summary_dict
from codeloop.session.store import SQLiteEventStore
from tests.llm.fake_server import FakeProvider, Reply
from tests.session.helpers import call, make_repo, turn
from tests.session.test_finish_gate import BREAK_MUL, FIX_ADD, repo_with_two_tests


def script_file(tmp: Path, name: str, turns: list[Turn]) -> str:
    """A `scripted:FILE` spec: the model a role's config names."""
    path = tmp / f"{name}.json"
    path.write_text(json.dumps([{"text": t.text, "tool_calls": t.tool_calls} for t in turns]))
    return f"scripted:{path.resolve()}"


def runner_for(store: SQLiteEventStore, sid: str, repo: Path, data: Path,
               on_event: Any = None, control: Control | None = None, api_key: str = "k"
               ) -> Runner:
    """A runner as `run`, `resume` and the server make one: the settings from the log."""
    settings = session_settings(fold(store.read(sid)), api_key=api_key)
    models = make_role_models(settings)
    return build_runner(store, sid, repo, settings, models.primary("coder"), base_dir=data,
                        parts=RuntimeParts(control=control), on_event=on_event,
                        router=make_router(settings, models))


def start(tmp: Path, repo: Path, settings: Settings) -> tuple[SQLiteEventStore, str]:
    store = open_store(tmp / "data")
    coder = make_role_models(settings).primary("coder")
    return store, start_session(store, "make the tests pass", repo, settings, coder.name)


def events(store: SQLiteEventStore, sid: str, kind: type[Event]) -> list[Any]:
    return [s.event for s in store.read(sid) if isinstance(s.event, kind)]


def roles_by_step(store: SQLiteEventStore, sid: str) -> list[tuple[str, str]]:
    return [(e.role, Path(e.model).stem) for e in events(store, sid, ModelCallFinished)]


# --- planner, coder, small -------------------------------------------------------------------

PLAN = call("propose_plan", summary="read, then fix add", steps=[
    {"id": "read", "title": "read big.txt"}, {"id": "fix", "title": "fix add()",
                                              "depends_on": ["read"]}])


def test_planning_turns_go_to_the_planner_code_turns_to_the_coder_summaries_to_small(
        tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    (repo / "big.txt").write_text("".join(f"line {n} of a long file\n" for n in range(1500)))
    script = [turn(call("read_file", path="calc.py")), turn(PLAN)]
    script += [turn(call("read_file", path="big.txt", start_line=1 + 30 * i,
                         end_line=30 * i + 100)) for i in range(30)]
    script += [turn(call("edit_file", path="calc.py", old="a - b", new="a + b")),
               turn(call("finish", summary="done"))]
    settings = Settings(context_window=8000, max_output_tokens=500, verify_on_finish=False,
                        models={role: script_file(tmp_path, role, script)
                                for role in ("planner", "coder")}
                        | {"small": script_file(tmp_path, "small",
                                                [Turn(text="SUMMARY: read big.txt")])})
    store, sid = start(tmp_path, repo, settings)
    assert runner_for(store, sid, repo, tmp_path / "data").run().status == "finished"

    steps = roles_by_step(store, sid)
    assert steps[:2] == [("planner", "planner")] * 2  # exploring and proposing the plan
    assert set(steps[2:]) == {("coder", "coder")}
    summaries = events(store, sid, AuxiliaryModelCall)
    assert summaries and {(e.purpose, e.role, Path(e.model).stem) for e in summaries} == {
        ("compaction", "small", "small")}
    compacted = [s.event for s in store.read(sid) if s.event.type == "compacted"]
    assert len(compacted) == len(summaries)
    assert "SUMMARY: read big.txt" in compacted[0].summary  # type: ignore[union-attr]
    # One ModelRouted per change of choice, not one per call.
    routed = [(e.purpose, e.role) for e in events(store, sid, ModelRouted)]
    assert routed == [("planning", "planner"), ("coding", "coder"), ("compaction", "small")]
    rows = summary_dict(fold(store.read(sid)))["by_model"]
    assert {(Path(r["model"]).stem, r["role"]) for r in rows} == {
        ("planner", "planner"), ("coder", "coder"), ("small", "small")}
    assert sum(r["calls"] for r in rows) == len(steps) + len(summaries)


# --- escalation, and resume ------------------------------------------------------------------

RUN_TESTS = call("run_tests")
# mul(2, 3) is 8 and then 9: the test that passed before the session keeps failing.
WRONG_AGAIN = call("edit_file", path="calc.py", old="return a ** b", new="return b ** a")
RIGHT = call("edit_file", path="calc.py", old="return b ** a", new="return a * b")
ESCALATION_SCRIPT = [
    turn(call("read_file", path="calc.py")),  # planner
    turn(FIX_ADD),                            # planner: the first edit is decided there
    turn(BREAK_MUL), turn(RUN_TESTS),         # coder: failed fix round 1
    turn(WRONG_AGAIN), turn(RUN_TESTS),       # coder: failed fix round 2
    turn(RIGHT), turn(RUN_TESTS),             # escalated: the round passes
    turn(call("finish", summary="add fixed; mul unbroken")),  # coder again
]
EXPECTED_ROLES = ["planner", "planner", "coder", "coder", "coder", "coder", "escalate",
                  "escalate", "coder"]


def escalation_settings(tmp: Path) -> Settings:
    return Settings(models={"escalate_after": 2} | {
        role: script_file(tmp, role, ESCALATION_SCRIPT)
        for role in ("planner", "coder", "escalate")})


def test_escalates_after_n_failed_fix_rounds_and_returns_when_a_round_passes(
        tmp_path: Path) -> None:
    repo = repo_with_two_tests(tmp_path)
    store, sid = start(tmp_path, repo, escalation_settings(tmp_path))
    state = runner_for(store, sid, repo, tmp_path / "data").run()
    assert state.status == "finished", state.finished
    assert [role for role, _ in roles_by_step(store, sid)] == EXPECTED_ROLES
    assert [stem for _, stem in roles_by_step(store, sid)] == EXPECTED_ROLES
    escalated = [e for e in events(store, sid, ModelRouted) if e.role == "escalate"]
    assert len(escalated) == 1 and "2 failed fix rounds" in escalated[0].reason
    assert state.routing.failed_rounds == 0


def test_resume_keeps_the_escalation_it_derives_from_the_log(tmp_path: Path) -> None:
    repo = repo_with_two_tests(tmp_path)
    store, sid = start(tmp_path, repo, escalation_settings(tmp_path))
    control = Control()

    def pause_on_escalation(stored: StoredEvent) -> None:
        if isinstance(stored.event, ModelRouted) and stored.event.role == "escalate":
            control.pause.set()

    first = runner_for(store, sid, repo, tmp_path / "data", pause_on_escalation, control)
    assert first.run().status == "paused"
    assert fold(store.read(sid)).routing.failed_rounds == 2
    routed_before = len(events(store, sid, ModelRouted))

    # A new process: models made afresh from the settings in the log, state from its fold.
    state = runner_for(store, sid, repo, tmp_path / "data").run()
    assert state.status == "finished", state.finished
    assert [role for role, _ in roles_by_step(store, sid)] == EXPECTED_ROLES
    after = events(store, sid, ModelRouted)[routed_before:]
    # The escalated turn after the resume needed no new decision; only the return did.
    assert [(e.purpose, e.role) for e in after] == [("coding", "coder")]


# --- fallback in the loop ----------------------------------------------------------------------


def dead_endpoint() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}/v1"


FIX_SCRIPT = [turn(call("read_file", path="calc.py")),
              turn(call("edit_file", path="calc.py", old="a - b", new="a + b")),
              turn(call("read_file", path="calc.py")),
              turn(call("finish", summary="fixed"))]


def fallback_settings(tmp: Path) -> Settings:
    return Settings(api_key="k", max_retries=0, verify_on_finish=False, models={
        "coder": {"model": "openai:gpt-4.1", "base_url": dead_endpoint()},
        "fallback": [script_file(tmp, "backup", FIX_SCRIPT)]})


def test_an_unreachable_provider_falls_back_and_the_role_stays_there(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    store, sid = start(tmp_path, repo, fallback_settings(tmp_path))
    state = runner_for(store, sid, repo, tmp_path / "data").run()
    assert state.status == "finished", state.finished
    moves = events(store, sid, ModelFellBack)
    # Once per role (planning turns on the planner, then the coder): then it is held.
    assert [(m.role, m.from_model, Path(m.to_model).stem, m.cause) for m in moves] == [
        ("planner", "openai:gpt-4.1", "backup", "provider_unavailable"),
        ("coder", "openai:gpt-4.1", "backup", "provider_unavailable")]
    assert {stem for _, stem in roles_by_step(store, sid)} == {"backup"}
    held = [e for e in events(store, sid, ModelRouted) if "held on" in e.reason]
    assert [e.role for e in held] == ["planner", "coder"]


def test_resume_keeps_a_role_on_the_model_it_fell_back_to(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    store, sid = start(tmp_path, repo, fallback_settings(tmp_path))
    control = Control()

    def pause_after_fallback(stored: StoredEvent) -> None:
        if isinstance(stored.event, ModelFellBack):
            control.pause.set()

    runner_for(store, sid, repo, tmp_path / "data", pause_after_fallback, control).run()
    assert len(events(store, sid, ModelFellBack)) == 1
    state = runner_for(store, sid, repo, tmp_path / "data").run()
    assert state.status == "finished", state.finished
    # The planner is not sent to the dead endpoint again after the resume; the coder,
    # which had not fallen back yet, is (once).
    assert [m.role for m in events(store, sid, ModelFellBack)] == ["planner", "coder"]


def test_a_providers_error_that_echoes_the_key_is_redacted_in_the_log(tmp_path: Path) -> None:
    key = "sk-routing-0123456789abcdefghij"
    echo = FakeProvider(replies=[Reply(status=503, body={"error": {
        "message": f"upstream rejected the request with Authorization: Bearer {key}"}})]).start()
    try:
        repo = make_repo(tmp_path)
        settings = Settings(max_retries=0, verify_on_finish=False, models={
            "coder": {"model": "openai:gpt-4.1", "base_url": echo.url + "/v1"},
            "fallback": [script_file(tmp_path, "backup", FIX_SCRIPT)]})
        store, sid = start(tmp_path, repo, settings.model_copy(update={"api_key": key}))
        state = runner_for(store, sid, repo, tmp_path / "data", api_key=key).run()
    finally:
        echo.stop()
    assert state.status == "finished", state.finished
    move = events(store, sid, ModelFellBack)[0]
    assert "upstream rejected" in move.error and key not in move.error
    assert all(key not in s.event.model_dump_json() for s in store.read(sid))
