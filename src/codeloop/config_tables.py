"""The tables of the settings (`[budgets]`, `[models]`, `[roles]`, `[limits]`, ...), each a
pydantic model that refuses unknown keys; `config.Settings` holds them."""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field, field_validator

from codeloop.sandbox.egress_rules import BadEntry, parse_entry


class Budgets(BaseModel):
    model_config = ConfigDict(extra="forbid")

    max_steps: int = 50
    max_cost_usd: float = 5.0
    max_tokens: int = 2_000_000
    wall_clock_s: float = 3600.0
    command_timeout_s: float = 300.0
    warn_fraction: float = 0.8


class Price(BaseModel):
    """Dollars per million tokens."""

    input: float
    output: float
    cache_read: float | None = None
    cache_write: float | None = None


class ModelChoice(BaseModel):
    """A model spec with its own endpoint: `{model = "openai:qwen", base_url = "http://..."}`."""

    model_config = ConfigDict(extra="forbid")

    model: str
    base_url: str | None = None


class ModelsSettings(BaseModel):
    """`[models]`: the model each role uses (unset: `model`) and the chain to fall back on."""

    model_config = ConfigDict(extra="forbid")

    planner: str | ModelChoice | None = None
    coder: str | ModelChoice | None = None
    small: str | ModelChoice | None = None
    reviewer: str | ModelChoice | None = None
    # The larger model the coder's turns move to after `escalate_after` failed fix rounds in
    # a row (unset: the planner's).
    escalate: str | ModelChoice | None = None
    # The read-only explorers the coder starts (`explore`); unset: the small model's.
    explorer: str | ModelChoice | None = None
    fallback: list[str | ModelChoice] = Field(default_factory=list)
    # 0: never escalate.
    escalate_after: int = Field(default=3, ge=0)


class RolesSettings(BaseModel):
    """`[roles]`: planner, coder and reviewer working one plan (docs/models.md)."""

    model_config = ConfigDict(extra="forbid")

    # Off: one agent does everything (the plan is advice). On: planner, coder and reviewer
    # take turns on one log and the loop executes the plan step by step.
    enabled: bool = False
    # The reviewer checks the whole diff before the session finishes.
    review: bool = True
    # How many times the reviewer may send the work back (K).
    max_reviews: int = Field(default=2, ge=0)
    # How many times a failed step may make the planner revise the plan.
    max_replans: int = Field(default=2, ge=0)
    # Each role's share of the session's budgets (turns, tokens, cost); a step's share of
    # them (its coder turns and their cost).
    planner_share: float = Field(default=0.25, gt=0, le=1)
    coder_share: float = Field(default=1.0, gt=0, le=1)
    reviewer_share: float = Field(default=0.25, gt=0, le=1)
    explorer_share: float = Field(default=0.25, gt=0, le=1)
    step_share: float = Field(default=0.5, gt=0, le=1)
    # Turns one explorer may take before it must answer.
    explorer_turns: int = Field(default=6, ge=1)


class ServerSettings(BaseModel):
    """`codeloop serve`: where the repositories a client may name live."""

    model_config = ConfigDict(extra="forbid")

    # Sessions may open repositories only inside these directories (plus --allow-root);
    # with none at all, the directory `serve` was started in.
    allowed_roots: list[str] = Field(default_factory=list)


class HandoffSettings(BaseModel):
    """`[handoff]`: who a branch commit is by, and the trailers its message ends with."""

    model_config = ConfigDict(extra="forbid")

    # "Name <email>"; None: your git identity (user.name / user.email).
    author: str | None = None
    # Each "Name <email>", written as a `Co-authored-by:` trailer.
    co_authors: list[str] = Field(default_factory=list)
    # A `Codeloop-Session: ID` trailer, so the commit leads back to its session.
    session_trailer: bool = True

    @field_validator("author")
    @classmethod
    def _author(cls, value: str | None) -> str | None:
        return None if value is None else _identity(value)

    @field_validator("co_authors")
    @classmethod
    def _co_authors(cls, value: list[str]) -> list[str]:
        return [_identity(v) for v in value]


def _identity(value: str) -> str:
    """`Name <email>` as git writes an identity; one line, nothing else."""
    match = re.fullmatch(r"([^<>\n]+?) *<([^<>\s]+@[^<>\s]+)>", value.strip())
    if match is None:
        raise ValueError(f"{value!r} is not `Name <email>`")
    return f"{match.group(1).strip()} <{match.group(2)}>"


class NetworkSettings(BaseModel):
    """`[network]`: what sandboxed commands may reach, only ever through the egress proxy.

    Off by default (no network at all). `allow` entries are spelled as in
    `sandbox/egress_rules.py`: `pypi.org`, `*.pythonhosted.org`, `name:port`, or an exact
    `address:port`, the only way to a private or loopback address (a local registry)."""

    model_config = ConfigDict(extra="forbid")

    allow: list[str] = Field(default_factory=list)
    # None: on when `allow` names a host. True with an empty list: only hosts the user
    # allows mid-session (`ask` mode) are reached.
    enabled: bool | None = None

    @field_validator("allow")
    @classmethod
    def _entries(cls, value: list[str]) -> list[str]:
        for text in value:
            try:
                parse_entry(text)
            except BadEntry as exc:
                raise ValueError(str(exc)) from None
        return value

    @property
    def on(self) -> bool:
        return bool(self.allow) if self.enabled is None else self.enabled


class MemorySettings(BaseModel):
    """`[memory]`: long-term memory across sessions (docs/memory.md)."""

    model_config = ConfigDict(extra="forbid")

    # Off: no recall into the prompt, no remember/recall tools, nothing captured.
    enabled: bool = True
    # What recall may put into the system prompt, and how many memories at most.
    recall_tokens: int = Field(default=1200, ge=0)
    top_k: int = Field(default=8, ge=0, le=50)


class LimitsSettings(BaseModel):
    """`[limits]`: what each sandboxed command (the agent's and the verifier's) may use; its
    wall time is `budgets.command_timeout_s`. Unset: the sandbox's defaults (docs/sandbox.md)."""

    model_config = ConfigDict(extra="forbid")

    # The whole command tree's memory, and each process's address space (the JVM and Go
    # reserve more than they use, so their builds may need more than the default 4 GB).
    memory_mb: int | None = Field(default=None, ge=256)
    # Tasks of the command tree, threads included (default: 1,024, or 32 per core if more).
    max_processes: int | None = Field(default=None, ge=16)
    max_file_mb: int | None = Field(default=None, ge=1)
    max_open_files: int | None = Field(default=None, ge=64)

    def given(self) -> dict[str, int]:
        """The limits the user set, by name."""
        return {name: value for name, value in self.model_dump().items() if value is not None}
