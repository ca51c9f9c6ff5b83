"""Events of the roles working one plan: revisions, step checks, reviews and explorers."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from codeloop.events.base import EventBase, ToolCallData
from codeloop.events.changes import PlanStep


class PlanRevised(EventBase):
    """The planner revised the plan after a step failed (its `propose_plan` call); like a
    proposal, it may wait for a person's `ApprovalGiven` for `call_id`."""

    type: Literal["plan_revised"] = "plan_revised"
    call_id: str
    revision: int
    reason: str
    summary: str
    steps: list[PlanStep]
    # The change against the plan it replaces, one line per step (`planner.dag.plan_diff`).
    diff: list[str] = Field(default_factory=list)
    needs_approval: bool = False


class StepChecked(EventBase):
    """A step's `done_when` check ran; a failed check fails the step."""

    type: Literal["step_checked"] = "step_checked"
    step_id: str
    check: str
    ok: bool
    detail: str = ""
    seconds: float = 0.0


class ReviewRequested(EventBase):
    """The coder called finish: the reviewer looks at the whole diff before the session ends."""

    type: Literal["review_requested"] = "review_requested"
    round: int
    summary: str
    files: list[str] = Field(default_factory=list)


class ReviewGiven(EventBase):
    """The reviewer's verdict (its `review` call): approve ends the session, send_back
    returns the work to the coder with the reasons."""

    type: Literal["review_given"] = "review_given"
    round: int
    call_id: str
    verdict: Literal["approve", "send_back"]
    reasons: str = ""


class ExplorerStarted(EventBase):
    """An explorer (a read-only subagent with its own context) started on a question."""

    type: Literal["explorer_started"] = "explorer_started"
    subagent: str
    call_id: str
    question: str


class ExplorerFinished(EventBase):
    """An explorer answered (or stopped); its tokens and cost are in its model calls."""

    type: Literal["explorer_finished"] = "explorer_finished"
    subagent: str
    ok: bool
    summary: str = ""
    turns: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    seconds: float = 0.0
    error: str = ""


class SubagentToolCall(EventBase):
    """A tool call an explorer made, with its screened result (not part of the session's
    own conversation)."""

    type: Literal["subagent_tool_call"] = "subagent_tool_call"
    subagent: str
    call: ToolCallData
    ok: bool
    output: str = ""
    error: str | None = None
    untrusted: bool = False
    duration_ms: float = 0.0
