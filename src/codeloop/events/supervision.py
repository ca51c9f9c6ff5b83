"""Events that watch the session: budgets, loops, compaction, verification, review."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from codeloop.events.base import EventBase


class BudgetWarning(EventBase):
    type: Literal["budget_warning"] = "budget_warning"
    budget: str
    used: float
    limit: float


class LoopDetected(EventBase):
    type: Literal["loop_detected"] = "loop_detected"
    pattern: str
    detail: str = ""
    action: Literal["nudge", "stop"] = "nudge"


class Compacted(EventBase):
    type: Literal["compacted"] = "compacted"
    dropped_events: int
    summary: str
    tokens_before: int
    tokens_after: int


class VerificationRan(EventBase):
    type: Literal["verification_ran"] = "verification_ran"
    phase: Literal["baseline", "after", "final"] = "after"
    commands: list[str] = Field(default_factory=list)
    passed: int = 0
    failed: int = 0
    new_failures: list[str] = Field(default_factory=list)
    fixed_failures: list[str] = Field(default_factory=list)
    still_failing: list[str] = Field(default_factory=list)
    summary: str = ""
    # Wall time of the commands that ran (reused results count nothing).
    seconds: float = 0.0
    # Why test runs ran no test at all (the runner missing, nothing collected): not verified.
    could_not_run: list[str] = Field(default_factory=list)
    # The interpreter the tests run with (said with the baseline).
    python: str = ""


class BaselineRecorded(EventBase):
    """Verification runs on the untouched tree (`RunResult` dumps), kept so that a resumed
    session still compares with the state before the edits."""

    type: Literal["baseline_recorded"] = "baseline_recorded"
    runs: list[dict[str, Any]] = Field(default_factory=list)


class ReviewDecided(EventBase):
    type: Literal["review_decided"] = "review_decided"
    action: Literal["apply", "commit", "discard", "reject"]
    feedback: str = ""
    files: list[str] = Field(default_factory=list)
