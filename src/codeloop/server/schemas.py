"""The API's request and response bodies: the contract other clients read from /openapi.json."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from codeloop.events import PlanStep


class BudgetsIn(BaseModel):
    """Limits for one session; unset fields keep the server's configured values."""

    model_config = ConfigDict(extra="forbid")

    max_steps: int | None = Field(default=None, ge=1)
    max_cost_usd: float | None = Field(default=None, ge=0)
    max_tokens: int | None = Field(default=None, ge=1)
    wall_clock_s: float | None = Field(default=None, gt=0)
    command_timeout_s: float | None = Field(default=None, gt=0)


class CreateSession(BaseModel):
    model_config = ConfigDict(extra="forbid")

    task: str = Field(min_length=1, description="What to do, in plain words.")
    repo: str = Field(min_length=1, description="Path of the repository on the server's disk.")
    model: str | None = Field(default=None, description="PROVIDER:MODEL, or scripted:FILE.")
    budgets: BudgetsIn = Field(default_factory=BudgetsIn)
    approval_mode: Literal["ask", "auto-edit", "full-auto"] | None = None
    plan_approval: bool | None = Field(
        default=None, description="Whether proposed plans wait for a person; unset follows "
                                  "approval_mode (only \"ask\" asks).")


class SessionOut(BaseModel):
    """A session as the listing shows it."""

    id: str
    created: float
    updated: float
    task: str
    repo: str
    model: str
    status: str = Field(description="running, paused, waiting_approval, finished, stopped, ...")
    queued: bool = Field(description="Waiting for a free worker slot.")
    active: bool = Field(description="Queued or running in this server's worker pool.")
    steps: int
    cost_usd: float
    last_seq: int


class BudgetUse(BaseModel):
    steps: int
    max_steps: int
    tokens: int
    max_tokens: int
    cost_usd: float
    max_cost_usd: float


class PlanOut(BaseModel):
    """A plan the model proposed: its steps (a DAG by `depends_on`) and their progress."""

    call_id: str = Field(description="The propose_plan call that proposed it.")
    summary: str
    approval: Literal["pending", "approved", "rejected"]
    done: int = Field(description="Steps done or skipped.")
    total: int
    steps: list[PlanStep]
    revision: int = Field(default=0, description="0, then one more with each revision the "
                                                 "planner made after a step failed.")


class PendingApproval(BaseModel):
    kind: Literal["tool", "plan"] = Field(
        default="tool", description="A tool call, or a plan (then `plan` holds its steps).")
    call_id: str
    name: str
    summary: str
    digest: str
    arguments: dict[str, Any] | None = None
    remember_rule: str = Field(description="The rule that approve-and-remember would add "
                                           "(for a plan: stop asking for plans this session).")
    plan: PlanOut | None = None


class ModelUsageOut(BaseModel):
    """One model in one role: its calls, tokens and cost."""

    model: str
    role: str
    calls: int
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cost_usd: float


class RoleBudgetOut(BaseModel):
    """A role's (or the current step's) use of its share of the session's budgets; a limit
    of 0 is none."""

    name: str
    turns: int
    turn_limit: int
    tokens: int
    token_limit: int
    cost_usd: float
    cost_limit: float
    spent: str | None = Field(default=None, description="The budget that is spent, if any.")


class SessionDetail(SessionOut):
    """The listing plus what the fold of the log says."""

    summary: str
    finish_reason: str
    input_tokens: int
    output_tokens: int
    tool_calls: int
    edits: int
    budgets: BudgetUse
    pending_approvals: list[PendingApproval]
    remembered_rules: list[str]
    plan: PlanOut | None = Field(default=None, description="The plan being worked, if any.")
    by_model: list[ModelUsageOut] = Field(default_factory=list,
                                          description="Calls, tokens and cost per model and role.")
    role_budgets: list[RoleBudgetOut] = Field(
        default_factory=list, description="With roles: each role's and the current step's "
                                          "share of the budgets, and what it used.")


class EventOut(BaseModel):
    """One event of the log with its place in it; `event` holds the typed fields."""

    seq: int
    type: str
    ts: float
    event: dict[str, Any]


class ApprovalIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    reason: str = Field(default="", description="Shown to the model (a denial's reason).")


class RejectIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    feedback: str = Field(min_length=1, description="A new instruction for the agent.")


class DiffOut(BaseModel):
    files: list[str]
    diff: str = Field(description="A git-style unified diff against the user's tree.")


class ApplyOut(BaseModel):
    applied: list[str]
    conflicts: list[str]
    refused: dict[str, str]


class Message(BaseModel):
    detail: str
