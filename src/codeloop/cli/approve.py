"""Asking the person at the terminal to approve a tool call or a plan.

What is shown is escaped (`safe_text`); the answer is bound to the digest of the raw call,
so the person approves exactly what runs even when its text had to be shown escaped.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from pydantic import ValidationError
from rich.console import Console, Group, RenderableType
from rich.markup import escape
from rich.panel import Panel
from rich.prompt import Prompt
from rich.text import Text

from codeloop.cli.render import diff_view, plan_table
from codeloop.cli.safe_text import shown
from codeloop.errors import CodeloopError
from codeloop.events import ApprovalGiven, ApprovalRequested, PlanStep, ToolCallData
from codeloop.policy.engine import remember_rule
from codeloop.tools.base import ToolContext
from codeloop.tools.edit_tools import EDIT_TOOL_TYPES, preview_diff
from codeloop.tools.plan_tools import ProposePlan

CHOICES = ["y", "n", "a", "p"]


class TerminalApprover:
    """Prompts on the terminal. `context` (set once the runner exists) lets an edit's
    approval show the diff it would make."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.context: ToolContext | None = None

    def __call__(self, request: ApprovalRequested, call: ToolCallData) -> ApprovalGiven | None:
        args = call.arguments or {}
        is_plan = call.name == ProposePlan.name
        if is_plan:
            steps = [PlanStep.model_validate(s) for s in args.get("steps", [])]
            self.console.print(plan_table(str(args.get("summary", "")), steps,
                                          title="approve plan?"))
        else:
            self.console.print(Panel(self._body(call.name, args),
                                     title=Text("approve ") + shown(call.name) + Text("?"),
                                     border_style="yellow"))
        always = "[a]pprove and stop asking about plans" if is_plan else "[a]lways allow this"
        # The brackets are escaped: unescaped, rich would take `[y]` for markup and drop it.
        answer = Prompt.ask(escape(f"[y]es / [n]o / {always} / [p]ause"), choices=CHOICES,
                            show_choices=False, default="y", console=self.console)
        if answer == "p":
            return None
        if answer == "n":
            reason = Prompt.ask("reason for the model (optional)", default="",
                                console=self.console)
            return ApprovalGiven(call_id=call.id, approved=False, digest=request.digest,
                                 reason=reason)
        rule = remember_rule(call.name, args) if answer == "a" else None
        return ApprovalGiven(call_id=call.id, approved=True, digest=request.digest,
                             remember_rule=rule)

    def _body(self, name: str, args: dict[str, Any]) -> RenderableType:
        """What the call would do: the command, the edit's diff, or else its arguments."""
        if name == "run":
            return shown(args.get("command", ""))
        as_json = shown(json.dumps(args, indent=2, ensure_ascii=False))
        if name not in EDIT_TOOL_TYPES or self.context is None:
            return as_json
        try:
            diff = preview_diff(name, args, self.context)
        except (CodeloopError, ValidationError, OSError) as exc:
            return Group(shown(f"cannot show the change: {exc}", "red"), as_json)
        return diff_view(diff) if diff else Text("(no change to any file)")


def terminal_approver(console: Console) -> TerminalApprover | None:
    """An approver that prompts on the terminal; None when nobody is there to answer."""
    if not sys.stdin.isatty():
        return None
    return TerminalApprover(console)
