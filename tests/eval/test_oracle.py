"""The oracle's turn logic on hand-made conversations (no runner involved)."""

from __future__ import annotations

from tests.eval.conftest import CALC, FakeTask

from codeloop.eval.swebench.hunks import PlannedEdit
from codeloop.eval.swebench.oracle import OracleModel, perturb
from codeloop.events import ToolCallData
from codeloop.llm.types import Message, ModelRequest, ToolSpec

TOOLS = [ToolSpec(n, "", {}) for n in
         ("grep", "read_file", "edit_file", "write_file", "run", "run_tests", "finish")]


def _oracle(task: FakeTask, perturbed: bool = False) -> OracleModel:
    return OracleModel(task.inst, lambda p: CALC if p == "calc.py" else None, perturbed=perturbed)


def _turn(model: OracleModel, messages: list[Message]) -> ToolCallData:
    [call] = model.complete(ModelRequest(messages=list(messages), tools=TOOLS)).tool_calls
    return call


def _answer(messages: list[Message], call: ToolCallData, content: str) -> None:
    messages.append(Message(role="assistant", tool_calls=[call]))
    messages.append(Message(role="tool", content=content, tool_call_id=call.id, name=call.name))


def test_search_read_edit_test_finish(fake_task: FakeTask) -> None:
    model = _oracle(fake_task)
    messages = [Message(role="user", content="Task: fix add")]
    names = []
    for _ in range(6):
        call = _turn(model, messages)
        names.append(call.name)
        if call.name == "finish":
            break
        _answer(messages, call, "ok")
    assert names == ["grep", "read_file", "edit_file", "run_tests", "finish"]
    calls = {m.tool_calls[0].name: m.tool_calls[0] for m in messages if m.tool_calls}
    edit_args = calls["edit_file"].arguments
    assert edit_args is not None
    assert "return a - b" in edit_args["old"] and "return a + b" in edit_args["new"]
    assert CALC.count(edit_args["old"]) == 1
    assert calls["run_tests"].arguments == {"target": "test_calc.py::test_add"}


def test_a_refused_edit_is_retried_exactly_then_by_writing_the_file(fake_task: FakeTask) -> None:
    model = _oracle(fake_task, perturbed=True)
    messages: list[Message] = []
    call = _turn(model, messages)
    while call.name != "edit_file":
        _answer(messages, call, "ok")
        call = _turn(model, messages)
    _answer(messages, call, "ERROR: old text not found")
    retry = _turn(model, messages)
    edit = model.edits[0]
    assert retry.name == "edit_file"
    assert retry.arguments == {"path": "calc.py", "old": edit.old, "new": edit.new}
    _answer(messages, retry, "ERROR: still not found")
    fallback = _turn(model, messages)
    assert fallback.name == "write_file" and fallback.arguments is not None
    assert "return a + b" in fallback.arguments["content"]
    _answer(messages, fallback, "[untrusted tool output: ...]\nERROR: disk full")
    # Out of ways to make this edit: it moves on rather than looping.
    assert _turn(model, messages).name == "run_tests"


def test_without_optional_tools_it_goes_straight_to_what_exists(fake_task: FakeTask) -> None:
    model = _oracle(fake_task)
    only = [ToolSpec("edit_file", "", {}), ToolSpec("finish", "", {})]
    first = model.complete(ModelRequest(messages=[], tools=only)).tool_calls[0]
    assert first.name == "edit_file"


def test_perturbations_are_realistic_and_keep_the_change() -> None:
    edit = PlannedEdit("f.py", "replace", old="    a = 1\n    b = 2\n    c = 3\n",
                       new="    a = 1\n    b = 20\n    c = 3\n")
    old, new = perturb(edit, "dedent")
    assert old == "a = 1\nb = 2\nc = 3\n" and new == "a = 1\nb = 20\nc = 3\n"
    old, new = perturb(edit, "trim_context")
    assert (old, new) == ("    b = 2\n", "    b = 20\n")
    old, new = perturb(edit, "trailing_ws")
    assert old == "    a = 1  \n    b = 2  \n    c = 3  \n" and new == edit.new
    assert perturb(edit, "exact") == (edit.old, edit.new)


def test_with_roles_it_plans_in_the_planners_turn_and_approves_in_the_reviewers(
        fake_task: FakeTask) -> None:
    model = _oracle(fake_task)
    planner = [ToolSpec(n, "", {}) for n in ("grep", "read_file", "propose_plan")]
    messages: list[Message] = []
    names = []
    for _ in range(3):
        [call] = model.complete(ModelRequest(messages=list(messages), tools=planner)).tool_calls
        names.append(call.name)
        _answer(messages, call, "ok")
    assert names == ["grep", "read_file", "propose_plan"]
    plan = messages[-2].tool_calls[0].arguments
    assert plan is not None and plan["steps"][0]["files"] == ["calc.py"]
    # The coder's turns go on from the reads, straight to the edit.
    assert _turn(model, messages).name == "edit_file"
    reviewer = [ToolSpec(n, "", {}) for n in ("read_file", "run_tests", "review")]
    [verdict] = model.complete(ModelRequest(messages=messages, tools=reviewer)).tool_calls
    assert verdict.name == "review" and verdict.arguments == {"verdict": "approve"}
