"""Plan validation and rendering: the problems the model is told about, and the text it reads."""

from __future__ import annotations

from codeloop.events import PlanStep, PlanStepChange, ToolCallData
from codeloop.planner.model import Plan
from codeloop.planner.render import render_plan
from codeloop.planner.validation import change_problems, plan_problems
from codeloop.tools.base import Observation
from codeloop.tools.plan_tools import ProposePlan
from codeloop.tools.registry import ToolRegistry


def step(sid: str, *deps: str, **kw: str) -> PlanStep:
    return PlanStep(id=sid, title=kw.get("title", f"do {sid}"), depends_on=list(deps),
                    **{k: v for k, v in kw.items() if k != "title"})


def test_a_dag_has_no_problems() -> None:
    assert plan_problems([step("a"), step("b", "a"), step("c", "a", "b")]) == []


def test_a_cycle_is_named_step_by_step() -> None:
    [problem] = plan_problems([step("a", "c"), step("b", "a"), step("c", "b")])
    assert "cycle" in problem
    assert "a -> c -> b -> a" in problem


def test_unknown_and_self_dependencies_and_duplicates() -> None:
    problems = plan_problems([step("a", "a"), step("b", "zz"), step("b"), step("c", title=" ")])
    text = "\n".join(problems)
    assert "'a' depends on itself" in text
    assert "unknown step 'zz'" in text
    assert "'b' is used twice" in text
    assert "'c' has an empty title" in text
    assert "cycle" not in text
    assert plan_problems([]) == ["a plan needs at least one step"]


def test_the_registry_turns_an_invalid_plan_into_an_error_the_model_reads() -> None:
    registry = ToolRegistry([ProposePlan()])
    bad = registry.validate(ToolCallData(id="1", name="propose_plan", arguments={
        "summary": "s", "steps": [{"id": "a", "title": "A", "depends_on": ["b"]},
                                  {"id": "b", "title": "B", "depends_on": ["a"]}]}))
    assert isinstance(bad, Observation) and "cycle" in str(bad.error)
    unknown_key = registry.validate(ToolCallData(id="2", name="propose_plan", arguments={
        "summary": "s", "steps": [{"id": "a", "title": "A", "after": ["b"]}]}))
    assert isinstance(unknown_key, Observation) and "after" in str(unknown_key.error)


def test_updates_apply_and_bad_ids_are_refused() -> None:
    plan = Plan(call_id="c1", summary="fix add", steps=(step("read"), step("fix", "read")))
    changes = [PlanStepChange(id="read", status="done", note="found it"),
               PlanStepChange(id="fix", status="in_progress")]
    assert change_problems(plan, changes) == []
    after = plan.updated(changes)
    assert [s.status for s in after.steps] == ["done", "in_progress"]
    assert after.done == 1 and plan.done == 0
    [problem] = change_problems(plan, [PlanStepChange(id="test", status="done")])
    assert "no step 'test'" in problem and "propose_plan" in problem
    assert change_problems(plan, []) != []


def test_render_plan_shows_marks_dependencies_and_progress() -> None:
    plan = Plan(call_id="c1", summary="fix add", approval="pending",
                steps=(step("read", detail="calc.py"), step("fix", "read")))
    plan = plan.updated([PlanStepChange(id="read", status="done", note="a - b is the bug")])
    text = render_plan(plan)
    assert text.splitlines()[0] == "Plan (pending, 1/2 done): fix add"
    assert "[x] read: do read" in text
    assert "      calc.py" in text and "note: a - b is the bug" in text
    assert "[ ] fix: do fix (after: read)" in text
