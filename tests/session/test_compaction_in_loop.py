"""Long sessions are compacted inside the loop, recorded as events; overflow stops cleanly."""

from __future__ import annotations

from pathlib import Path

from codeloop.config import Settings
from codeloop.llm.scripted import ScriptedModel, Turn
from codeloop.session.setup import build_runner, open_store, start_session
from tests.session.helpers import call, make_repo, turn


def big_repo(tmp: Path) -> Path:
    repo = make_repo(tmp)
    (repo / "big.txt").write_text("".join(f"line {n} of a long file\n" for n in range(1500)))
    return repo


def run(tmp: Path, script: list[Turn], window: int, summary: str = "SUMMARY: read big.txt"):  # type: ignore[no-untyped-def]
    repo = big_repo(tmp)
    cfg = Settings(context_window=window, max_output_tokens=500, verify_on_finish=False)
    store = open_store(tmp / "data")
    model = ScriptedModel(script)
    sid = start_session(store, "make the tests pass", repo, cfg, model.name)
    summariser = ScriptedModel([Turn(text=summary)] * 10, name="summariser")
    runner = build_runner(store, sid, repo, cfg, model, base_dir=tmp / "data",
                          summariser=summariser)
    return store, runner, runner.run()


def test_old_turns_are_summarised_and_edits_kept(tmp_path: Path) -> None:
    script = [turn(call("edit_file", path="calc.py", old="a - b", new="a + b"))]
    script += [turn(call("read_file", path="big.txt", start_line=1 + 30 * i,
                         end_line=30 * i + 100)) for i in range(40)]
    script += [turn(call("finish", summary="done"))]
    # The fixed part (system prompt, tool schemas, repo map) is about 2,800 tokens of these.
    store, runner, state = run(tmp_path, script, window=8000)
    assert state.status == "finished", state.finished
    compactions = [e.event for e in store.read(runner.session_id) if e.event.type == "compacted"]
    assert compactions, "a long session must be compacted"
    first = compactions[0]
    assert "SUMMARY: read big.txt" in first.summary  # type: ignore[union-attr]
    assert "calc.py" in first.summary  # type: ignore[union-attr] # the edit survives compaction
    assert first.tokens_after < first.tokens_before  # type: ignore[union-attr]


def test_a_context_that_cannot_fit_stops_with_a_clear_error(tmp_path: Path) -> None:
    script = [turn(call("read_file", path="big.txt")), turn(call("finish", summary="x"))]
    _store, _runner, state = run(tmp_path, script, window=1200)
    assert state.status == "context_overflow"
    assert state.finished is not None and "budget" in state.finished.reason
