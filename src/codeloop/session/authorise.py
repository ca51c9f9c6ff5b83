"""Between a validated tool call and its run: the policy's decision and, when it asks, a human."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Literal

from codeloop.events import (
    ApprovalGiven,
    ApprovalRequested,
    Event,
    PolicyDecided,
    SessionStarted,
    ToolCallData,
)
from codeloop.policy.engine import Decision, PolicyEngine
from codeloop.policy.hook_pins import HookGuard
from codeloop.session.state import SessionState
from codeloop.tools.base import Observation
from codeloop.tools.registry import Validated
from codeloop.workspace.base import Workspace

Approver = Callable[[ApprovalRequested, ToolCallData], ApprovalGiven | None]


def describe(name: str, args: dict[str, Any]) -> str:
    """One line saying what a call would do, for the person asked to approve it."""
    if name == "run":
        return f"run: {args.get('command', '')}"
    if name == "request_network":
        return f"let commands reach {args.get('host', '')}: {args.get('reason', '')}"
    if "path" in args:
        return f"{name}: {args['path']}"
    return f"{name}: {args}"


def ask_human(request: ApprovalRequested, call: ToolCallData, state: SessionState,
              approver: Approver | None, emit: Callable[[Event], None]) -> ApprovalGiven | None:
    """Record the request (once) and the approver's answer; None while nobody has answered."""
    if call.id not in state.pending_approvals:
        emit(request)
    answer = approver(request, call) if approver is not None else None
    if answer is not None:
        emit(answer)
    return answer


def session_hook_guard(started: SessionStarted, workspace: Workspace) -> HookGuard:
    """Hooks run in the user's repository with the files pinned in the start event; the
    session's workspace view and state directory are written by the model and sandboxed
    commands, so nothing there may run as a hook."""
    state_dir = getattr(workspace, "state_dir", None)  # layered workspaces only
    forbidden = [workspace.path, *([state_dir] if isinstance(state_dir, Path) else [])]
    return HookGuard.recorded(workspace.root, started.hook_files, forbidden)


def _with_floor(decision: Decision, floor: str | None) -> Decision:
    """The decision once the tool's own reason to ask (if any) is added: an allow becomes an
    ask, an ask tells the person that reason too."""
    if floor is None:
        return decision
    if decision.action == "allow":
        return Decision("ask", "", floor, "tool")
    return Decision(decision.action, decision.rule, f"{decision.reason}; {floor}",
                    decision.source)


class Gatekeeper:
    """Records each decision as an event; approvals are bound to the exact call's digest."""

    def __init__(self, policy: PolicyEngine, approver: Approver | None,
                 emit: Callable[[Event], None]) -> None:
        self.policy = policy
        self.approver = approver
        self.emit = emit

    def remember(self, approvals: Iterable[ApprovalGiven]) -> None:
        """Turn "approve and remember" answers into allow rules for the rest of the session."""
        for given in approvals:
            if given.approved and given.remember_rule:
                self.policy.allow_rule(given.remember_rule)

    def authorise(self, call: ToolCallData, checked: Validated, state: SessionState, cwd: Path,
                  session_id: str) -> Observation | Literal[True] | None:
        """True to run, an error observation if refused, None to pause for a human."""
        args = checked.args.model_dump()
        given = state.approvals.get(call.id)
        if given is None:
            # The engine fails closed itself: an error inside it comes back as a deny.
            decision = self.policy.decide(call.name, checked.tool.tier, args, state.tainted, cwd,
                                          session_id)
            decision = _with_floor(decision, checked.tool.approval_floor()
                                   if decision.action != "deny" else None)
            self.emit(PolicyDecided(call_id=call.id, decision=decision.action,
                                    rule=decision.rule, reason=decision.reason,
                                    source=decision.source))
            if decision.action == "allow":
                return True
            if decision.action == "deny":
                return Observation(ok=False, error=f"denied by policy "
                                   f"({decision.rule or decision.source}): {decision.reason}")
            request = ApprovalRequested(call_id=call.id, name=call.name,
                                        summary=describe(call.name, args),
                                        digest=self.policy.approval_digest(call.name, args))
            answer = ask_human(request, call, state, self.approver, self.emit)
            if answer is None:
                return None
            self.remember([answer])
            given = answer
        if not given.approved:
            return Observation(ok=False, error="the user denied this call: "
                               f"{given.reason or 'no reason given'}")
        if given.digest != self.policy.approval_digest(call.name, args):
            return Observation(ok=False, error="the approval was for a different call; not run")
        return True
