"""Events of the plan and of what changed: plans, edits, commands."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from codeloop.events.base import EventBase


class PlanStepIn(BaseModel):
    """A proposed step: its goal (`title`), the files it touches and when it is done."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    title: str
    detail: str = ""
    depends_on: list[str] = Field(default_factory=list)
    files: list[str] = Field(default_factory=list)
    # "tests: TARGET", "command: CMD", "review: CRITERION" or "" (`planner.dag.DoneWhen`).
    done_when: str = ""


StepStatus = Literal["pending", "in_progress", "done", "failed", "skipped"]


class PlanStep(PlanStepIn):
    """A step with its progress."""

    status: StepStatus = "pending"
    note: str = ""


class PlanProposed(EventBase):
    """The model proposed a plan (the call of `propose_plan`); a person may have to approve it.

    The answer is the `ApprovalGiven` for `call_id`, so a plan waits exactly as a tool call does.
    """

    type: Literal["plan_proposed"] = "plan_proposed"
    call_id: str
    summary: str
    steps: list[PlanStep]
    needs_approval: bool = False


class PlanStepChange(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    status: StepStatus | None = None
    note: str | None = None


class PlanUpdated(EventBase):
    """Progress on the current plan: step statuses and notes (the set of steps is unchanged).

    `by` is "model" (`update_plan`) or "loop" (a step started, checked or out of budget)."""

    type: Literal["plan_updated"] = "plan_updated"
    changes: list[PlanStepChange]
    by: str = "model"


class FileEdited(EventBase):
    type: Literal["file_edited"] = "file_edited"
    path: str
    before_sha: str | None
    after_sha: str | None
    diff: str
    tool: str = ""
    strategy: str = "exact"


class CommandRan(EventBase):
    type: Literal["command_ran"] = "command_ran"
    command: str
    exit_code: int | None
    duration_ms: float
    timed_out: bool = False
    killed_reason: str | None = None
    sandbox: str = "subprocess"
