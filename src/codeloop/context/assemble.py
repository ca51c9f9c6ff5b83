"""Assemble the model's messages in a stable order, each section within its budget.

Order (stable first, so provider prefix caching works): system prompt, tool schemas (sent
as `ModelRequest.tools`), project instructions, repo map — one system message ending the
cached prefix — then the task and plan, then the conversation (compacted when it must be).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from codeloop.context.budget import SectionBudgets, fit_text
from codeloop.context.compaction import (
    PLAN_NAME,
    CompactionResult,
    ContextOverflow,
    compact,
)
from codeloop.context.tokens import TokenCounter, get_counter, messages_tokens
from codeloop.llm.types import Message, Model, ToolSpec


@dataclass
class ContextParts:
    system_prompt: str
    tools: list[ToolSpec] = field(default_factory=list)
    project_instructions: str = ""
    repo_map: str = ""
    task: str = ""
    plan: str = ""
    # Everything after the task: assistant turns, tool results, later user messages.
    conversation: list[Message] = field(default_factory=list)


@dataclass
class AssembledContext:
    messages: list[Message]
    tools: list[ToolSpec]
    tokens: dict[str, int]
    compaction: CompactionResult | None = None

    @property
    def total_tokens(self) -> int:
        return sum(self.tokens.values())


def system_message(parts: ContextParts, budgets: SectionBudgets,
                   counter: TokenCounter) -> tuple[Message, dict[str, int]]:
    """The stable prefix as one system message, each part cut (visibly) to its budget."""
    instructions, _ = fit_text(parts.project_instructions, budgets.project_instructions,
                               "the full file is in the repository", counter)
    repo_map, _ = fit_text(parts.repo_map, budgets.repo_map,
                           "use repo_map(focus) or find_symbol for more", counter)
    sections = [parts.system_prompt.strip()]
    if instructions.strip():
        sections.append("# Project instructions\n" + instructions.strip())
    if repo_map.strip():
        sections.append("# Repository map\n" + repo_map.strip())
    tokens = {
        "system_prompt": counter.count(parts.system_prompt),
        "project_instructions": counter.count(instructions),
        "repo_map": counter.count(repo_map),
    }
    return Message("system", "\n\n".join(sections), cache_breakpoint=True), tokens


def tools_tokens(tools: list[ToolSpec], counter: TokenCounter) -> int:
    return sum(counter.count(json.dumps({"name": t.name, "description": t.description,
                                         "parameters": t.parameters}, sort_keys=True))
               for t in tools)


def assemble(parts: ContextParts, budgets: SectionBudgets, counter: TokenCounter | None = None,
             summariser: Model | None = None) -> AssembledContext:
    """Messages for the next model call; compacts the conversation if it must and raises
    ContextOverflow if even that does not fit."""
    counter = counter or get_counter()
    system, tokens = system_message(parts, budgets, counter)
    tokens["tool_schemas"] = tools_tokens(parts.tools, counter)
    prefix = messages_tokens([system], counter) + tokens["tool_schemas"]
    remaining = budgets.total - prefix
    if remaining <= 0:
        raise ContextOverflow(
            f"the system prompt, tools and repo map need {prefix} tokens; "
            f"the budget is {budgets.total}",
            "shorten the project instructions or use a model with a larger window")
    dynamic: list[Message] = []
    if parts.task:
        dynamic.append(Message("user", parts.task))
    if parts.plan:
        plan, _ = fit_text(parts.plan, budgets.plan, "the full plan is in the session log",
                           counter)
        dynamic.append(Message("user", "# Plan\n" + plan, name=PLAN_NAME))
    dynamic.extend(parts.conversation)
    result = compact(dynamic, remaining, summariser, counter)
    tokens["conversation"] = result.tokens_after
    return AssembledContext([system, *result.messages], parts.tools, tokens,
                            result if result.compacted else None)
