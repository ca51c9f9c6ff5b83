from __future__ import annotations

import pytest

from codeloop.context.assemble import ContextParts, assemble
from codeloop.context.budget import SectionBudgets, fit_text
from codeloop.context.compaction import ContextOverflow
from codeloop.context.tokens import get_counter
from codeloop.llm.types import Message, ToolSpec

TOOLS = [ToolSpec("read_file", "Read a file", {"type": "object", "properties": {}})]


def parts(**overrides: object) -> ContextParts:
    base = ContextParts(system_prompt="You are codeloop.", tools=TOOLS,
                        project_instructions="Use tabs.", repo_map="shop/cart.py:\n  4│ class Cart",
                        task="Fix the cart", plan="1. read\n2. fix",
                        conversation=[Message("assistant", "reading")])
    for key, value in overrides.items():
        setattr(base, key, value)
    return base


def test_stable_order_and_cache_breakpoint() -> None:
    out = assemble(parts(), SectionBudgets(total=10_000))
    system = out.messages[0]
    assert system.role == "system" and system.cache_breakpoint
    order = [system.content.index(s) for s in ("You are codeloop.", "# Project instructions",
                                               "# Repository map")]
    assert order == sorted(order)
    assert [m.content for m in out.messages[1:]] == ["Fix the cart", "# Plan\n1. read\n2. fix",
                                                     "reading"]
    assert out.messages[2].name == "plan"
    assert out.tools == TOOLS and out.tokens["tool_schemas"] > 0
    # The prefix does not depend on the conversation.
    later = assemble(parts(conversation=[Message("assistant", "other")]), SectionBudgets(10_000))
    assert later.messages[0] == system


def test_oversized_section_is_cut_with_a_visible_note() -> None:
    huge = "\n".join(f"rule {i}: always do thing number {i}" for i in range(2_000))
    out = assemble(parts(project_instructions=huge),
                   SectionBudgets(total=20_000, project_instructions=300))
    assert "not shown" in out.messages[0].content
    assert out.tokens["project_instructions"] <= 300


def test_prefix_larger_than_budget_raises() -> None:
    with pytest.raises(ContextOverflow):
        assemble(parts(system_prompt="word " * 5_000), SectionBudgets(total=1_000))


def test_fit_text_keeps_head_and_tail() -> None:
    text = "\n".join(f"line {i}" for i in range(1_000))
    out, cut = fit_text(text, 200, "read_file shows the rest", get_counter())
    assert cut and out.startswith("line 0") and out.rstrip().endswith("line 999")
    assert "read_file shows the rest" in out
    assert get_counter().count(out) <= 200
    assert fit_text("short", 200, "x") == ("short", False)


def test_budgets_scale_with_window() -> None:
    small = SectionBudgets.for_window(16_000)
    large = SectionBudgets.for_window(200_000)
    assert small.total == 16_000 - 4_096 and small.repo_map < large.repo_map
