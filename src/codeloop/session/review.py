"""The reviewer: before a session with roles ends, it reads the whole diff against the task
and the plan, may run the tests and checks, and approves or sends the work back (at most
`roles.max_reviews` times)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from pydantic import Field

from codeloop.config_tables import Budgets, RolesSettings
from codeloop.events import ReviewGiven, ReviewRequested, SystemNote
from codeloop.planner.render import render_plan
from codeloop.policy.untrusted import inspect, wrap_untrusted
from codeloop.session.role_budgets import role_use
from codeloop.session.roles_state import REVIEW_NOTE, SENT_BACK_NOTE, RolesState
from codeloop.session.state import SessionState
from codeloop.tools.base import Observation, Tool, ToolArgs, ToolContext

# The key under which the runner offers the review tool the roles' folded state.
REVIEW_STATE = "review_state"
_DIFF_CHARS = 20_000

REVIEWER_BRIEF = """\
You are the reviewer. The coder says the task is done (review {round}; you may send the work
back {left} more time(s)). Check the whole diff below against the task and the plan: read
the code you need, run the tests (run_tests) or checks (run_checks), then call review with
verdict "approve", or "send_back" with reasons the coder can act on. You cannot edit files.

The coder's summary: {summary}

{plan}"""


class ReviewArgs(ToolArgs):
    verdict: Literal["approve", "send_back"]
    reasons: str = Field(default="", description="Why, and what the coder must change "
                                                 "(required for send_back).")


class ReviewTool(Tool):
    name = "review"
    description = ("The reviewer's verdict on the whole diff: approve ends the session; "
                   "send_back returns the work to the coder with your reasons.")
    args_model = ReviewArgs
    tier = "read"

    def run(self, args: ReviewArgs, ctx: ToolContext) -> Observation:
        view: Any = ctx.services.get(REVIEW_STATE)
        roles = view() if callable(view) else None
        if not isinstance(roles, RolesState) or not roles.review_open:
            return Observation(ok=False, error="there is no review open; the coder hands "
                                               "its work over by calling finish")
        if args.verdict == "send_back" and not args.reasons.strip():
            return Observation(ok=False, error="say why the work goes back (reasons)")
        ctx.emit(ReviewGiven(round=roles.review_round, call_id="", verdict=args.verdict,
                             reasons=args.reasons))
        return Observation(ok=True, output=("approved: the session ends" if args.verdict ==
                                            "approve" else "sent back to the coder"))


class ReviewDesk:
    """Hands the coder's work to the reviewer and carries out the verdict."""

    def __init__(self, roles: RolesSettings, budgets: Budgets, ctx: ToolContext,
                 emit: Callable[..., None], finish: Callable[..., None]) -> None:
        self.roles = roles
        self.budgets = budgets
        self.ctx = ctx
        self.emit = emit
        self.finish = finish

    def on_finish(self, state: SessionState, summary: str) -> Observation | None:
        """A review instead of the end, or None when there is none to be had (off, K
        send-backs made, the reviewer's budget spent)."""
        roles = state.roles
        if not self.roles.review or roles.sent_back >= self.roles.max_reviews:
            return None
        if role_use(state, "reviewer", self.budgets, self.roles).spent:
            return None
        self.emit(ReviewRequested(round=roles.review_round + 1, summary=summary,
                                  files=self.ctx.workspace.changed_files()))
        return Observation(ok=True, output="Your work goes to the reviewer now; it approves "
                                           "it (the session ends) or sends it back with "
                                           "reasons.")

    def supervise(self, state: SessionState) -> bool:
        """Carry out a verdict, or brief the reviewer on an open review; True if it acted."""
        roles = state.roles
        if roles.approved is not None:
            self.finish("finished", roles.handed_summary, "")
            return True
        if roles.sent_back_due is not None:
            self.emit(SystemNote(kind=SENT_BACK_NOTE, text=(
                f"The reviewer sent your work back ({roles.sent_back} of at most "
                f"{self.roles.max_reviews}): {roles.sent_back_due}\nAs the coder, fix this, "
                "verify it and call finish again.")))
            return True
        if not roles.review_open or roles.review_briefed:
            return False
        if role_use(state, "reviewer", self.budgets, self.roles).spent:
            self.emit(ReviewGiven(round=roles.review_round, call_id="", verdict="approve",
                                  reasons="the reviewer's budget is spent: accepted unreviewed"))
            return True
        diff = self.ctx.workspace.diff()
        if len(diff) > _DIFF_CHARS:
            diff = f"{diff[:_DIFF_CHARS]}\n[... the diff goes on; read the files for the rest]"
        seen = inspect(diff or "(no changes)")
        plan = render_plan(state.plan) if state.plan is not None else "There is no plan."
        self.emit(SystemNote(kind=REVIEW_NOTE, untrusted=True, text="\n\n".join([
            REVIEWER_BRIEF.format(round=roles.review_round,
                                  left=self.roles.max_reviews - roles.sent_back,
                                  summary=roles.handed_summary, plan=plan),
            wrap_untrusted(seen.text, seen.flags, seen.notes, what="REPOSITORY TEXT",
                           source="the diff")])))
        return True
