"""The repo map made when a session starts: its place in every request, resume, compaction."""

from __future__ import annotations

from pathlib import Path

from codeloop.config import Settings
from codeloop.context.assemble import tools_tokens
from codeloop.context.messages import REPO_MAP_NAME, build_messages
from codeloop.context.tokens import get_counter, messages_tokens
from codeloop.llm.openai_provider import to_wire_messages
from codeloop.llm.scripted import ScriptedModel, Turn
from codeloop.llm.types import Completion, DeltaCallback, Message, ModelRequest
from codeloop.session.control import Control
from codeloop.session.setup import RuntimeParts, build_runner, open_store, start_session
from codeloop.session.state import fold
from codeloop.session.store import SQLiteEventStore
from tests.session.helpers import FIX_SCRIPT, call, git, make_repo, turn

TASK = "add() in calc.py subtracts; make the tests pass"


class Recording:
    """A real scripted model that keeps every request it was sent."""

    def __init__(self, model: ScriptedModel, control: Control | None = None) -> None:
        self.model = model
        self.name = model.name
        self.requests: list[ModelRequest] = []
        self.control = control

    def complete(self, request: ModelRequest, on_delta: DeltaCallback | None = None
                 ) -> Completion:
        self.requests.append(request)
        if self.control is not None:
            self.control.pause.set()  # stop after this step, as a person pressing pause
        return self.model.complete(request, on_delta)


def code_repo(tmp: Path) -> Path:
    repo = make_repo(tmp)
    (repo / "AGENTS.md").write_text("Run the tests with unittest.")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "instructions")
    return repo


def started_of(store: SQLiteEventStore, sid: str):  # type: ignore[no-untyped-def]
    started = fold(store.read(sid)).started
    assert started is not None
    return started


def test_requests_are_system_then_repo_map_then_task_then_conversation(tmp_path: Path) -> None:
    repo = code_repo(tmp_path)
    cfg = Settings(verify_on_finish=False)
    store = open_store(tmp_path / "data")
    sid = start_session(store, TASK, repo, cfg, "scripted")
    started = started_of(store, sid)
    assert "calc.py:" in started.repo_map and "def add(a, b)" in started.repo_map
    model = Recording(ScriptedModel(FIX_SCRIPT))
    state = build_runner(store, sid, repo, cfg, model, base_dir=tmp_path / "data").run()
    assert state.status == "finished"
    assert len(model.requests) == len(FIX_SCRIPT)
    for request in model.requests:
        system, repo_map, task, *conversation = request.messages
        assert system.role == "system" and "Run the tests with unittest." in system.content
        assert repo_map.name == REPO_MAP_NAME and repo_map.content.startswith(started.repo_map)
        assert task.content == f"Task:\n{TASK}"
        assert system.cache_breakpoint and repo_map.cache_breakpoint and task.cache_breakpoint
        assert not any(m.cache_breakpoint for m in conversation)
    assert model.requests[-1].messages[3].role == "assistant"


def test_a_resumed_session_sends_the_same_bytes_before_the_conversation(tmp_path: Path
                                                                        ) -> None:
    repo = code_repo(tmp_path)
    cfg = Settings(verify_on_finish=False)
    store = open_store(tmp_path / "data")
    sid = start_session(store, TASK, repo, cfg, "scripted")
    control = Control()
    first = Recording(ScriptedModel(FIX_SCRIPT), control)
    state = build_runner(store, sid, repo, cfg, first, base_dir=tmp_path / "data",
                         parts=RuntimeParts(control=control)).run()
    assert state.status == "paused"
    # The repository changes before the resume: the recorded map must not.
    (repo / "shipping.py").write_text("def shipping_cost(weight):\n    return 5 * weight\n")
    second = Recording(ScriptedModel(FIX_SCRIPT))
    state = build_runner(store, sid, repo, cfg, second, base_dir=tmp_path / "data").run()
    assert state.status == "finished"
    prefix = first.requests[0].messages[:3]
    for request in second.requests:
        assert request.messages[:3] == prefix
    assert "shipping_cost" not in prefix[1].content
    replayed = build_messages(started_of(store, sid), fold(store.read(sid)).transcript)
    assert replayed[:3] == prefix


def test_compaction_counts_the_repo_map_in_the_fixed_part(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    (repo / "big.txt").write_text("".join(f"line {n} of a long file\n" for n in range(1500)))
    cfg = Settings(context_window=8000, max_output_tokens=500, verify_on_finish=False)
    store = open_store(tmp_path / "data")
    sid = start_session(store, TASK, repo, cfg, "scripted")
    assert started_of(store, sid).repo_map
    script = [turn(call("edit_file", path="calc.py", old="a - b", new="a + b"))]
    script += [turn(call("read_file", path="big.txt", start_line=1 + 30 * i,
                         end_line=30 * i + 100)) for i in range(40)]
    script += [turn(call("finish", summary="done"))]
    model = Recording(ScriptedModel(script))
    summariser = ScriptedModel([Turn(text="SUMMARY: read big.txt")] * 10, name="summariser")
    state = build_runner(store, sid, repo, cfg, model, base_dir=tmp_path / "data",
                         summariser=summariser).run()
    assert state.status == "finished", state.finished
    assert any(e.event.type == "compacted" for e in store.read(sid))
    counter = get_counter()
    for request in model.requests:
        assert request.messages[1].name == REPO_MAP_NAME
        used = (messages_tokens(request.messages, counter) + tools_tokens(request.tools, counter)
                + cfg.max_output_tokens)
        assert used <= int(cfg.context_window * 0.95)


def test_no_repo_map_without_code_or_when_turned_off(tmp_path: Path) -> None:
    store = open_store(tmp_path / "data")
    empty = tmp_path / "empty"
    empty.mkdir()
    prose = tmp_path / "prose"
    prose.mkdir()
    (prose / "notes.md").write_text("# Notes\nNothing to map here.\n")
    for repo, cfg in [(empty, Settings()), (prose, Settings()),
                      (make_repo(tmp_path), Settings(repo_map_tokens=0))]:
        sid = start_session(store, TASK, repo, cfg, "scripted")
        started = started_of(store, sid)
        assert started.repo_map == ""
        messages = build_messages(started, [])
        assert [m.role for m in messages] == ["system", "user"]
        assert messages[1].content.startswith("Task:")


def test_the_plan_slot_follows_the_task(tmp_path: Path) -> None:
    store = open_store(tmp_path / "data")
    sid = start_session(store, TASK, code_repo(tmp_path), Settings(), "scripted")
    started = started_of(store, sid)
    messages = build_messages(started, [], plan_text="1. fix add\n2. run the tests")
    assert [m.name for m in messages] == [None, REPO_MAP_NAME, None, "plan"]
    assert messages[3] == Message("user", "# Plan\n1. fix add\n2. run the tests", name="plan")
    assert build_messages(started, []) == messages[:3]


def test_openai_wire_joins_the_repo_map_and_the_task_into_one_user_turn(tmp_path: Path
                                                                         ) -> None:
    store = open_store(tmp_path / "data")
    sid = start_session(store, TASK, code_repo(tmp_path), Settings(), "scripted")
    started = started_of(store, sid)
    wire = to_wire_messages(build_messages(started, [], plan_text="1. fix add"))
    assert [m["role"] for m in wire] == ["system", "user"]
    user = wire[1]["content"]
    assert user.startswith(started.repo_map)
    assert user.index(started.repo_map) < user.index("Task:\n") < user.index("# Plan\n")
