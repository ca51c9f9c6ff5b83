"""Between a valid `propose_plan` call and its run: record the proposal and, when plans need
approval, wait for a person exactly as a tool call waits (same events, same pause)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from codeloop.events import ApprovalRequested, Event, PlanProposed, PlanRevised, ToolCallData
from codeloop.planner.dag import carried_over, plan_diff
from codeloop.policy.engine import approval_digest
from codeloop.session.authorise import Approver, ask_human
from codeloop.session.state import SessionState
from codeloop.tools.base import Observation
from codeloop.tools.plan_tools import ProposePlan, ProposePlanArgs, steps


def plans_remembered(state: SessionState) -> bool:
    """True once a person chose "approve and remember" for a plan: stop asking this session."""
    return any(given.approved and given.remember_rule and given.call_id in state.proposals
               for given in state.approvals.values())


def _proposal(call: ToolCallData, args: ProposePlanArgs, state: SessionState,
              needs: bool) -> PlanProposed | PlanRevised:
    """A first plan, or — while a failed step waits for one — a revision of the plan being
    worked: its steps keep what is done, and the event says why and what changed."""
    plan, reason = state.plan, state.roles.replan_reason
    if plan is None or reason is None:
        return PlanProposed(call_id=call.id, summary=args.summary, steps=list(steps(args)),
                            needs_approval=needs)
    return PlanRevised(call_id=call.id, revision=plan.revision + 1, reason=reason,
                       summary=args.summary, steps=list(carried_over(plan, args.steps)),
                       diff=plan_diff(plan, args.steps), needs_approval=needs)


class PlanGate:
    def __init__(self, required: bool, approver: Approver | None,
                 emit: Callable[[Event], None]) -> None:
        self.required = required
        self.approver = approver
        self.emit = emit

    def authorise(self, call: ToolCallData, args: ProposePlanArgs,
                  state: SessionState) -> Observation | Literal[True] | None:
        """True to adopt the plan, an error observation if rejected, None to wait for a person."""
        proposal = state.proposals.get(call.id)
        if proposal is None:
            needs = self.required and not plans_remembered(state)
            self.emit(_proposal(call, args, state, needs))
            if not needs:
                return True
        elif proposal.approval == "approved" and call.id not in state.approvals:
            return True
        digest = approval_digest(ProposePlan.name, args.model_dump(mode="json"))
        given = state.approvals.get(call.id)
        if given is None:
            request = ApprovalRequested(
                call_id=call.id, name=call.name, digest=digest,
                summary=f"plan: {args.summary} ({len(args.steps)} steps)")
            given = ask_human(request, call, state, self.approver, self.emit)
            if given is None:
                return None
        if not given.approved:
            return Observation(ok=False, error=(
                f"the user rejected this plan: {given.reason or 'no reason given'}. Revise the "
                "plan and call propose_plan again."))
        if given.digest != digest:
            return Observation(ok=False, error="the approval was for a different plan; propose "
                                               "it again")
        return True
