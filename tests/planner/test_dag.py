"""The plan as the loop executes it: ready steps, `done_when`, and how a revision differs."""

from __future__ import annotations

import pytest

from codeloop.config import load_settings
from codeloop.events import PlanStep, PlanStepChange, PlanStepIn
from codeloop.planner.dag import DoneWhen, carried_over, plan_diff, ready_steps
from codeloop.planner.model import Plan
from codeloop.planner.validation import plan_problems


def plan(*steps: PlanStep) -> Plan:
    return Plan(call_id="p", summary="s", steps=steps)


def step(sid: str, *deps: str, status: str = "pending", **kw: object) -> PlanStep:
    return PlanStep(id=sid, title=f"do {sid}", depends_on=list(deps), status=status, **kw)  # type: ignore[arg-type]


def test_ready_steps_wait_for_their_dependencies_in_dependency_order() -> None:
    # Listed out of order: c needs a, b needs c; d is independent.
    p = plan(step("b", "c"), step("c", "a"), step("a"), step("d"))
    assert [s.id for s in ready_steps(p)] == ["a", "d"]
    p = p.updated([PlanStepChange(id="a", status="done")])
    # d needs nothing, c needs a: d comes first in dependency order.
    assert [s.id for s in ready_steps(p)] == ["d", "c"]
    # A failed dependency blocks what comes after it until the plan is revised.
    p = p.updated([PlanStepChange(id="c", status="failed")])
    assert [s.id for s in ready_steps(p)] == ["d"]
    p = p.updated([PlanStepChange(id="c", status="skipped")])
    assert [s.id for s in ready_steps(p)] == ["d", "b"]


def test_done_when_forms_and_their_errors() -> None:
    assert DoneWhen.parse("") == DoneWhen("none")
    assert DoneWhen.parse(" tests: tests/test_x.py ") == DoneWhen("tests", "tests/test_x.py")
    assert DoneWhen.parse("command: make check").runs
    assert not DoneWhen.parse("review: the API is documented").runs
    for bad in ("tests", "tests:", "when it works", "shell: ls"):
        with pytest.raises(ValueError, match="is not understood"):
            DoneWhen.parse(bad)


def test_a_plan_with_a_cycle_unknown_deps_or_a_bad_check_is_refused() -> None:
    problems = plan_problems([PlanStepIn(id="a", title="A", depends_on=["b"]),
                              PlanStepIn(id="b", title="B", depends_on=["a"]),
                              PlanStepIn(id="c", title="C", depends_on=["zz"],
                                         done_when="whenever")])
    text = "; ".join(problems)
    assert "cycle" in text and "zz" in text and "done_when 'whenever'" in text


def test_a_revision_keeps_done_steps_that_did_not_change_and_says_what_changed() -> None:
    old = plan(step("read", status="done"), step("fix", "read", status="failed",
                                                   done_when="command: make test"),
               step("docs", "fix"))
    new = [PlanStepIn(id="read", title="do read"),
           PlanStepIn(id="fix", title="do fix properly", depends_on=["read"],
                      done_when="command: make test"),
           PlanStepIn(id="test", title="add a test", depends_on=["fix"])]
    assert plan_diff(old, new) == ["= read: do read (was done)",
                                   "~ fix: do fix properly (changed: title)",
                                   "+ test: add a test", "- docs: do docs (was pending)"]
    assert [s.status for s in carried_over(old, new)] == ["done", "pending", "pending"]


def test_roles_are_off_by_default_and_on_from_the_environment(monkeypatch: pytest.MonkeyPatch,
                                                             tmp_path: object) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.delenv("CODELOOP_ROLES", raising=False)
    assert not load_settings(None).roles.enabled
    monkeypatch.setenv("CODELOOP_ROLES", "1")
    assert load_settings(None).roles.enabled
