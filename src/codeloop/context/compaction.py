"""Compaction of a long conversation to fit a token budget, never by silent truncation.

Stage 1 shortens old tool outputs (head and tail kept, with a note on how to see the rest).
Stage 2 asks a summariser model to summarise the older turns into a structured summary.
Always kept whole: system messages, the first user message (the task), plan messages
(`name == "plan"`), the recent turns, and every edit (calls to the edit tools with the
essence of their results), listed in the summary message. If that still does not fit,
`ContextOverflow` is raised.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from codeloop.context.tokens import TokenCounter, get_counter, messages_tokens
from codeloop.errors import CodeloopError
from codeloop.events import Compacted
from codeloop.llm.types import Message, Model, ModelRequest

EDIT_TOOLS = frozenset({"edit_file", "write_file", "apply_patch"})
PLAN_NAME = "plan"
KEEP_RECENT = 6
SHORT_OUTPUT_LINES = 12
SUMMARY_PREFIX = "[Summary of earlier turns, written by codeloop's compaction]"
_SUMMARY_MAX_TOKENS = 1500

SUMMARY_INSTRUCTIONS = """You compress the history of a coding agent's session.
Write a concise structured summary of the transcript with exactly these sections:
## Progress
## Findings (files, functions, facts learned; keep paths and line numbers)
## Failed attempts
## Open questions
## Next steps
Do not invent anything that is not in the transcript."""


class ContextOverflow(CodeloopError):
    """The conversation does not fit the model's context even after compaction."""


@dataclass
class CompactionResult:
    messages: list[Message]
    tokens_before: int
    tokens_after: int
    dropped_messages: int = 0
    shortened_outputs: int = 0
    summary: str = ""
    edits_kept: list[str] = field(default_factory=list)

    @property
    def compacted(self) -> bool:
        return self.dropped_messages > 0 or self.shortened_outputs > 0

    def event(self) -> Compacted:
        """The `Compacted` event to append to the session's log."""
        what = (f"shortened {self.shortened_outputs} tool outputs; "
                f"summarised {self.dropped_messages} messages")
        return Compacted(dropped_events=self.dropped_messages,
                         summary=f"{what}\n{self.summary}".strip(),
                         tokens_before=self.tokens_before, tokens_after=self.tokens_after)


def _is_protected(index: int, message: Message, first_user: int | None) -> bool:
    return message.role == "system" or index == first_user or message.name == PLAN_NAME


def shorten_output(text: str, keep_lines: int = SHORT_OUTPUT_LINES) -> tuple[str, bool]:
    """Head and tail of a long tool output with a note saying how much was cut."""
    lines = text.splitlines()
    if len(lines) <= keep_lines:
        return text, False
    head, tail = lines[: keep_lines // 2], lines[-(keep_lines // 2):]
    cut = len(lines) - len(head) - len(tail)
    note = (f"[… {cut} lines of this old tool output removed by compaction; "
            f"run the tool again to see them]")
    return "\n".join([*head, note, *tail]), True


def _edit_essence(call_message: Message, results: dict[str, Message]) -> list[str]:
    out = []
    for call in call_message.tool_calls:
        if call.name not in EDIT_TOOLS:
            continue
        args = call.arguments or {}
        target = args.get("path") or args.get("file") or ""
        result = results.get(call.id)
        first = (result.content.strip().splitlines() or [""])[0] if result else "(no result)"
        out.append(f"- {call.name} {target}: {first[:200]}".rstrip())
    return out


def _transcript(messages: list[Message]) -> str:
    parts = []
    for m in messages:
        calls = "".join(f"\n  -> {c.name}({c.raw_arguments or json.dumps(c.arguments)})"
                        for c in m.tool_calls)
        parts.append(f"[{m.role}{' ' + m.name if m.name else ''}] {m.content}{calls}")
    return "\n\n".join(parts)


def compact(messages: list[Message], budget_tokens: int, summariser: Model | None = None,
            counter: TokenCounter | None = None, keep_recent: int = KEEP_RECENT
            ) -> CompactionResult:
    """`messages` made to fit `budget_tokens`; raises ContextOverflow when they cannot."""
    counter = counter or get_counter()
    before = messages_tokens(messages, counter)
    if before <= budget_tokens:
        return CompactionResult(list(messages), before, before)

    first_user = next((i for i, m in enumerate(messages) if m.role == "user"), None)
    recent_start = _recent_start(messages, keep_recent)
    results = {m.tool_call_id: m for m in messages if m.role == "tool" and m.tool_call_id}
    edit_result_ids = {c.id for m in messages for c in m.tool_calls if c.name in EDIT_TOOLS}

    # Stage 1: shorten old tool outputs (not edit results: they are the record of changes).
    stage1: list[Message] = []
    shortened = 0
    for i, m in enumerate(messages):
        if i < recent_start and m.role == "tool" and m.tool_call_id not in edit_result_ids:
            text, cut = shorten_output(m.content)
            if cut:
                shortened += 1
                m = Message(role=m.role, content=text, tool_call_id=m.tool_call_id, name=m.name)
        stage1.append(m)
    tokens = messages_tokens(stage1, counter)
    if tokens <= budget_tokens:
        return CompactionResult(stage1, before, tokens, shortened_outputs=shortened)

    # Stage 2: summarise the unprotected older turns.
    old = [(i, m) for i, m in enumerate(stage1)
           if i < recent_start and not _is_protected(i, m, first_user)]
    edits: list[str] = []
    for _i, m in old:
        edits.extend(_edit_essence(m, results))
    if not old:
        raise _overflow(tokens, budget_tokens, "nothing old enough is left to summarise")
    if summariser is None:
        raise _overflow(tokens, budget_tokens, "no summariser model is configured")
    completion = summariser.complete(ModelRequest(
        messages=[Message("system", SUMMARY_INSTRUCTIONS),
                  Message("user", _transcript([m for _i, m in old]))],
        max_tokens=_SUMMARY_MAX_TOKENS, temperature=0.0, stream=False))
    summary = completion.text.strip()
    body = [SUMMARY_PREFIX, summary]
    if edits:
        body += ["## Edits made so far (all kept)", *edits]
    summary_message = Message("user", "\n".join(body), name="summary")
    old_ids = {i for i, _m in old}
    insert_at = min(old_ids)
    kept: list[Message] = []
    for i, m in enumerate(stage1):
        if i == insert_at:
            kept.append(summary_message)
        if i not in old_ids:
            kept.append(m)
    after = messages_tokens(kept, counter)
    if after > budget_tokens:
        raise _overflow(after, budget_tokens, "even after summarising older turns")
    return CompactionResult(kept, before, after, dropped_messages=len(old),
                            shortened_outputs=shortened, summary=summary, edits_kept=edits)


def _recent_start(messages: list[Message], keep_recent: int) -> int:
    """Index where the kept recent tail begins; never between a tool call and its result."""
    start = max(0, len(messages) - keep_recent)
    while start > 0 and messages[start].role == "tool":
        start -= 1
    return start


def _overflow(tokens: int, budget: int, why: str) -> ContextOverflow:
    return ContextOverflow(
        f"the conversation needs {tokens} tokens but the budget is {budget} ({why})",
        "raise the context budget, use a model with a larger context window, "
        "or split the task into smaller ones",
    )
