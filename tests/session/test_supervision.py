"""Budgets, loop detection and malformed model output, through the real loop."""

from __future__ import annotations

from pathlib import Path

import pytest

from codeloop.config import Settings
from codeloop.config_tables import Budgets, Price
from codeloop.llm.openai_provider import OpenAIModel
from codeloop.llm.scripted import Turn
from codeloop.session.state import SessionState
from tests.llm.fake_server import FakeProvider, Reply, openai_stream
from tests.session.helpers import call, make_repo, new_session, scripted, settings, turn


def kinds(store, runner) -> list[str]:  # type: ignore[no-untyped-def]
    return [e.event.type for e in store.read(runner.session_id)]


def notes(store, runner) -> list[str]:  # type: ignore[no-untyped-def]
    return [e.event.kind for e in store.read(runner.session_id)  # type: ignore[union-attr]
            if e.event.type == "system_note"]


def reading(n: int) -> list[Turn]:
    return [turn(call("read_file", path="calc.py", start_line=1 + (i % 2))) for i in range(n)]


def test_step_budget_stops_and_keeps_the_work(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    script = [turn(call("edit_file", path="calc.py", old="a - b", new="a + b")), *reading(10)]
    store, runner = new_session(tmp_path, repo, scripted(script), settings(max_steps=5))
    state = runner.run()
    assert state.status == "budget_exceeded" and state.steps == 5
    assert "steps" in (state.finished.reason if state.finished else "")
    assert "budget" in notes(store, runner)
    assert "+    return a + b" in runner.ctx.workspace.diff()


def test_token_budget(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    _store, runner = new_session(tmp_path, repo, scripted(reading(20)), settings(max_tokens=1500))
    state = runner.run()
    assert state.status == "budget_exceeded" and state.total_tokens >= 1500


def test_wall_clock_budget(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    model = scripted(reading(20))
    model.delay_s = 0.15
    _store, runner = new_session(tmp_path, repo, model, settings(wall_clock_s=0.5))
    state = runner.run()
    assert state.status == "budget_exceeded" and 0.5 <= state.active_s < 5


def test_cost_budget_with_a_priced_provider(tmp_path: Path) -> None:
    fake = FakeProvider().start()
    try:
        for n in range(10):
            fake.replies.append(Reply(sse=openai_stream(
                "", [(f"c{n}", "read_file", f'{{"path": "calc.py", "start_line": {1 + n % 2}}}')],
                usage=(100_000, 1000, 0))))
        model = OpenAIModel("priced", api_key="k", base_url=fake.url + "/v1",
                            price=Price(input=1.0, output=10.0), max_retries=0)
        repo = make_repo(tmp_path)
        _store, runner = new_session(tmp_path, repo, model, settings(max_cost_usd=0.3))
        state = runner.run()
    finally:
        fake.stop()
    assert state.status == "budget_exceeded" and state.cost_usd >= 0.3
    assert state.steps == 3  # 0.11 dollars a call


def run_script(tmp_path: Path, script: list[Turn], cfg: Settings | None = None):  # type: ignore[no-untyped-def]
    repo = make_repo(tmp_path)
    store, runner = new_session(tmp_path, repo, scripted(script), cfg)
    return store, runner, runner.run()


def loop_events(store, runner) -> list[tuple[str, str]]:  # type: ignore[no-untyped-def]
    return [(e.event.pattern, e.event.action) for e in store.read(runner.session_id)  # type: ignore[union-attr]
            if e.event.type == "loop_detected"]


def test_same_action_same_result_four_times(tmp_path: Path) -> None:
    same = [turn(call("read_file", path="calc.py")) for _ in range(12)]
    store, runner, state = run_script(tmp_path, same)
    assert loop_events(store, runner) == [("repeat", "nudge"), ("repeat", "stop")]
    assert state.status == "stuck"


def test_same_failing_action_three_times(tmp_path: Path) -> None:
    failing = [turn(call("read_file", path="missing.py")) for _ in range(12)]
    store, runner, state = run_script(tmp_path, failing)
    assert loop_events(store, runner)[0] == ("repeat_failure", "nudge")
    assert state.status == "stuck"


def test_alternation_over_six_steps(tmp_path: Path) -> None:
    ab = [turn(call("read_file", path="calc.py")) if i % 2 == 0
          else turn(call("list_files", path=".")) for i in range(20)]
    store, runner, state = run_script(tmp_path, ab)
    assert loop_events(store, runner)[0] == ("alternation", "nudge")
    assert state.status == "stuck"


def test_three_turns_without_action(tmp_path: Path) -> None:
    talk = [Turn(text="thinking...") for _ in range(10)]
    store, runner, state = run_script(tmp_path, talk)
    assert loop_events(store, runner) == [("no_action", "nudge"), ("no_action", "stop")]
    assert state.status == "stuck"
    assert notes(store, runner).count("no_action") >= 3


def test_three_malformed_calls_in_a_row(tmp_path: Path) -> None:
    bad = [turn({"name": "read_file", "raw_arguments": '{"path": '}) for _ in range(10)]
    store, runner, state = run_script(tmp_path, bad)
    assert loop_events(store, runner)[0] == ("malformed", "nudge")
    assert state.status == "stuck"


def test_a_nudge_that_works_lets_the_session_finish(tmp_path: Path) -> None:
    script = [Turn(text="hmm")] * 3 + [turn(call("finish", summary="ok"))]
    store, runner, state = run_script(tmp_path, script)
    assert loop_events(store, runner) == [("no_action", "nudge")]
    assert state.status == "finished"


@pytest.mark.parametrize(("spec", "expected"), [
    ({"name": "read_file", "raw_arguments": "{not json"}, "not a valid JSON object"),
    ({"name": "delete_everything", "arguments": {}}, "unknown tool 'delete_everything'"),
    ({"name": "read_file", "arguments": {"path": 3, "bogus": 1}}, "invalid arguments for read_file"),
    ({"name": "read_file", "arguments": {}}, "path: Field required"),
])
def test_malformed_calls_get_a_specific_error(tmp_path: Path, spec: dict, expected: str) -> None:  # type: ignore[type-arg]
    store, runner, state = run_script(tmp_path, [turn(spec), turn(call("finish", summary="x"))])
    results = [e.event for e in store.read(runner.session_id)
               if e.event.type == "tool_call_finished"]
    assert not results[0].ok and expected in (results[0].error or "")  # type: ignore[union-attr]
    assert state.status == "finished"


def test_empty_reply_is_answered(tmp_path: Path) -> None:
    store, runner, state = run_script(tmp_path, [Turn(), turn(call("finish", summary="x"))])
    texts = [e.event.text for e in store.read(runner.session_id)  # type: ignore[union-attr]
             if e.event.type == "system_note"]
    assert "empty reply" in texts[0] and state.status == "finished"


def test_finish_with_other_calls_runs_finish_last(tmp_path: Path) -> None:
    script = [turn(call("finish", "f", summary="done"), call("read_file", "r", path="calc.py"))]
    store, runner, state = run_script(tmp_path, script)
    order = [e.event.call_id for e in store.read(runner.session_id)  # type: ignore[union-attr]
             if e.event.type == "tool_call_finished"]
    assert order == ["r", "f"] and state.status == "finished"


def test_budget_warning_comes_before_the_stop(tmp_path: Path) -> None:
    cfg = Settings(budgets=Budgets(max_steps=5, warn_fraction=0.6))
    store, runner, state = run_script(tmp_path, [turn(call("read_file", path="calc.py",
                                                           start_line=1 + i % 3))
                                                 for i in range(10)], cfg)
    seq = kinds(store, runner)
    assert seq.index("budget_warning") < seq.index("session_finished")
    assert isinstance(state, SessionState) and state.status == "budget_exceeded"
