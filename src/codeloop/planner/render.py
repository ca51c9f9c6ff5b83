"""The plan as text for the model (and for logs): one line per step, with marks and deps."""

from __future__ import annotations

from codeloop.planner.model import Plan

MARKS = {"pending": "[ ]", "in_progress": "[~]", "done": "[x]", "failed": "[!]",
         "skipped": "[-]"}


def render_plan(plan: Plan, progress: bool = True) -> str:
    """A compact, stable text rendering of the plan and, unless `progress` is off, its
    progress (off for the prompt's plan section, which must not change with every update)."""
    if not progress:
        lines = [f"Plan: {plan.summary}"]
    else:
        lines = [f"Plan ({plan.approval}, {plan.done}/{len(plan.steps)} done): {plan.summary}"]
    for step in plan.steps:
        after = f" (after: {', '.join(step.depends_on)})" if step.depends_on else ""
        mark = f"{MARKS[step.status]} " if progress else "- "
        lines.append(f"{mark}{step.id}: {step.title}{after}")
        if step.detail:
            lines.append(f"      {step.detail}")
        if step.files:
            lines.append(f"      files: {', '.join(step.files)}")
        if step.done_when:
            lines.append(f"      done when: {step.done_when}")
        if progress and step.note:
            lines.append(f"      note: {step.note}")
    return "\n".join(lines)
