"""The oracle: a scripted model that solves a task with its gold patch, the way an agent would.

Each turn it looks at the conversation so far and picks the next action: search for the
code the patch touches, read those files, make one edit per hunk, run the FAIL_TO_PASS
tests, finish. With roles it also plays the planner (one step: apply the fix to the files
the patch touches) and the reviewer (it approves), choosing by the tools it is offered. A refused edit is retried with the exact text (and, failing that, the whole
file is written). The perturbed variant first sends each hunk with a realistic mistake —
lost indentation, trimmed context, trailing whitespace — to exercise the edit engine.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from codeloop.eval.swebench.hunks import PlannedEdit, plan_edits
from codeloop.eval.swebench.instances import SweInstance
from codeloop.events import ToolCallData
from codeloop.llm.types import Completion, DeltaCallback, Message, ModelRequest

Perturbation = Literal["exact", "dedent", "trim_context", "trailing_ws"]
PERTURBATIONS: tuple[Perturbation, ...] = ("dedent", "trim_context", "trailing_ws", "exact")
_ID = re.compile(r"^oracle-(?P<kind>[a-z_]+)-(?P<index>\d+)-(?P<attempt>\d+)$")


@dataclass(frozen=True)
class _Call:
    kind: str
    index: int
    attempt: int
    ok: bool | None  # None: no result yet


def perturb(edit: PlannedEdit, how: Perturbation) -> tuple[str, str]:
    """The (old, new) pair of `edit` with a mistake of kind `how` (exact when it cannot apply)."""
    old, new = edit.old, edit.new
    if how == "dedent":
        indent = min(_indent_width(old), _indent_width(new))
        if indent:
            return _strip_indent(old, indent), _strip_indent(new, indent)
    elif how == "trim_context":
        old_lines, new_lines = old.splitlines(keepends=True), new.splitlines(keepends=True)
        while len(old_lines) > 1 and len(new_lines) > 1 and old_lines[0] == new_lines[0]:
            old_lines, new_lines = old_lines[1:], new_lines[1:]
        while len(old_lines) > 1 and len(new_lines) > 1 and old_lines[-1] == new_lines[-1]:
            old_lines, new_lines = old_lines[:-1], new_lines[:-1]
        return "".join(old_lines), "".join(new_lines)
    elif how == "trailing_ws":
        return re.sub(r"(?m)(?<=\S)$", "  ", old), new
    return old, new


def _indent_width(text: str) -> int:
    widths = [len(ln) - len(ln.lstrip(" ")) for ln in text.splitlines() if ln.strip()]
    return min(widths) if widths else 0


def _strip_indent(text: str, width: int) -> str:
    return "".join(ln[width:] if ln[:width].isspace() else ln.lstrip(" ")
                   for ln in text.splitlines(keepends=True))


def _is_error(content: str) -> bool:
    body = content.split("\n", 1)[1] if content.startswith("[untrusted") else content
    return body.startswith("ERROR")


class OracleModel:
    """A `Model` that replays an instance's gold patch through the tools, turn by turn."""

    def __init__(self, inst: SweInstance, read_base: Callable[[str], str | None], *,
                 perturbed: bool = False, seed: int = 0) -> None:
        self.name = "oracle-perturbed" if perturbed else "oracle"
        self.inst = inst
        self.plans = plan_edits(inst.patch, read_base)
        self.edits = [e for p in self.plans for e in p.edits]
        rng = random.Random(f"{seed}:{inst.instance_id}")
        self.first_try: list[Perturbation] = [
            rng.choice(PERTURBATIONS) if perturbed else "exact" for _ in self.edits
        ]

    @property
    def steps_needed(self) -> int:
        """Steps the replay may take: the search, a read per file, up to three tries per
        hunk, the test run, a few finishes the gate may send back, and with roles the plan
        and the review."""
        return 1 + len(self.plans) + 3 * len(self.edits) + 1 + 4 + 2

    # -- reading the conversation ---------------------------------------------------------

    @staticmethod
    def _history(messages: list[Message]) -> list[_Call]:
        results = {m.tool_call_id: not _is_error(m.content)
                   for m in messages if m.role == "tool" and m.tool_call_id}
        calls: list[_Call] = []
        for m in messages:
            for call in m.tool_calls if m.role == "assistant" else []:
                match = _ID.match(call.id)
                if match:
                    calls.append(_Call(match["kind"], int(match["index"]),
                                       int(match["attempt"]), results.get(call.id)))
        return calls

    # -- deciding the next action ---------------------------------------------------------

    def complete(self, request: ModelRequest, on_delta: DeltaCallback | None = None) -> Completion:
        tools = {t.name for t in request.tools}
        history = self._history(request.messages)
        done = {(c.kind, c.index) for c in history}
        call = self._next(history, done, tools)
        return Completion(text="", tool_calls=[call], model=self.name, stop_reason="tool_use")

    def _tool(self, kind: str, index: int, attempt: int, name: str, **args: Any) -> ToolCallData:
        return ToolCallData(id=f"oracle-{kind}-{index}-{attempt}", name=name, arguments=args)

    def _next(self, history: list[_Call], done: set[tuple[str, int]], tools: set[str]
              ) -> ToolCallData:
        if "review" in tools:  # the reviewer's turn: the gold patch is right
            attempt = sum(1 for c in history if c.kind == "review")
            return self._tool("review", 0, attempt, "review", verdict="approve")
        if "grep" in tools and ("search", 0) not in done and self.edits:
            return self._tool("search", 0, 0, "grep", pattern=self._search_pattern())
        if "read_file" in tools:
            for index, plan in enumerate(self.plans):
                if ("read", index) not in done and plan.edits[0].kind == "replace":
                    first = max(plan.edits[0].line - 20, 1)
                    return self._tool("read", index, 0, "read_file", path=plan.path,
                                      start_line=first, end_line=first + 120)
        if "propose_plan" in tools and "edit_file" not in tools:  # the planner's turn
            attempt = sum(1 for c in history if c.kind == "plan")
            return self._tool("plan", 0, attempt, "propose_plan", **self._plan())
        for index, edit in enumerate(self.edits):
            attempts = [c for c in history if c.kind == "edit" and c.index == index]
            if any(c.ok for c in attempts):
                continue
            if attempts and attempts[-1].ok is None:
                continue  # the result has not come back; do not resend
            action = self._edit_action(index, edit, len(attempts), tools)
            if action is not None:
                return action
        if "run_tests" in tools and ("tests", 0) not in done and self.inst.FAIL_TO_PASS:
            return self._tool("tests", 0, 0, "run_tests", target=" ".join(self._test_targets()))
        attempt = sum(1 for c in history if c.kind == "finish")
        return self._tool("finish", 0, attempt, "finish",
                          summary=f"Applied the fix for {self.inst.instance_id} and ran its tests.")

    def _edit_action(self, index: int, edit: PlannedEdit, attempt: int, tools: set[str]
                     ) -> ToolCallData | None:
        if edit.kind == "create" or (attempt >= 2 and "write_file" in tools):
            if attempt > 2 or "write_file" not in tools:
                return None
            return self._tool("edit", index, attempt, "write_file", path=edit.path,
                              content=edit.after)
        if edit.kind == "delete":
            if attempt or "run" not in tools:
                return None
            return self._tool("edit", index, attempt, "run", command=f"rm -- '{edit.path}'")
        if attempt >= 2 or "edit_file" not in tools:
            return None
        how = self.first_try[index] if attempt == 0 else "exact"
        old, new = perturb(edit, how)
        return self._tool("edit", index, attempt, "edit_file", path=edit.path, old=old, new=new)

    def _plan(self) -> dict[str, Any]:
        """One step: the fix in the files the patch touches; the finish gate tests it."""
        files = sorted({plan.path for plan in self.plans})
        return {"summary": f"Fix {self.inst.instance_id}",
                "steps": [{"id": "fix", "title": "Apply the fix", "files": files}]}

    def _search_pattern(self) -> str:
        """A distinctive line of the first changed file, as an agent would grep for."""
        for edit in self.edits:
            for line in edit.old.splitlines():
                words: list[str] = re.findall(r"[A-Za-z_][A-Za-z0-9_]{5,}", line)
                if words:
                    return max(words, key=len)
        return re.escape(self.edits[0].path.rsplit("/", 1)[-1])

    def _test_targets(self) -> list[str]:
        if any("::" in t for t in self.inst.FAIL_TO_PASS):
            return list(self.inst.FAIL_TO_PASS)
        return self.inst.test_files()
