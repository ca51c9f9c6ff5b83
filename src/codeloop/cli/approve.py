"""Asking the person at the terminal to approve a tool call or a plan."""

from __future__ import annotations

import json
import sys

from rich.console import Console
from rich.panel import Panel
from rich.prompt import Prompt

from codeloop.cli.render import plan_table
from codeloop.events import ApprovalGiven, ApprovalRequested, PlanStep, ToolCallData
from codeloop.policy.engine import remember_rule
from codeloop.session.authorise import Approver
from codeloop.tools.plan_tools import ProposePlan


def terminal_approver(console: Console) -> Approver | None:
    """An approver that prompts on the terminal; None when nobody is there to answer."""
    if not sys.stdin.isatty():
        return None

    def ask(request: ApprovalRequested, call: ToolCallData) -> ApprovalGiven | None:
        args = call.arguments or {}
        is_plan = call.name == ProposePlan.name
        if is_plan:
            steps = [PlanStep.model_validate(s) for s in args.get("steps", [])]
            console.print(plan_table(str(args.get("summary", "")), steps, title="approve plan?"))
        else:
            shown = args.get("command") if call.name == "run" else json.dumps(args, indent=2)
            console.print(Panel(str(shown), title=f"approve {call.name}?", border_style="yellow"))
        always = "stop asking about plans" if is_plan else "always allow this"
        answer = Prompt.ask(f"[y]es, [n]o, [a] {always}, [p]ause",
                            choices=["y", "n", "a", "p"], default="y", console=console)
        if answer == "p":
            return None
        if answer == "n":
            reason = Prompt.ask("reason for the model (optional)", default="", console=console)
            return ApprovalGiven(call_id=call.id, approved=False, digest=request.digest,
                                 reason=reason)
        rule = remember_rule(call.name, args) if answer == "a" else None
        return ApprovalGiven(call_id=call.id, approved=True, digest=request.digest,
                             remember_rule=rule)

    return ask
