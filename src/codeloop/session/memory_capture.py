"""What a session's log teaches for later sessions: a person's denials and rejections with
their reasons (corrections), and at the end an episode (task, outcome, files, what failed).

`Captures` follows the events one by one and drafts memories; the session's memory service
checks and stores them. A denial without a reason teaches nothing and is not kept, nor is
the stock refusal of an unattended run.
"""

from __future__ import annotations

from dataclasses import dataclass

from codeloop.events import (
    ApprovalGiven,
    ApprovalRequested,
    FileEdited,
    PlanProposed,
    ReviewDecided,
    SessionFinished,
    SessionStarted,
    StoredEvent,
    ToolCallFinished,
    VerificationRan,
)
from codeloop.memory.records import MemoryKind, Source

_TASK_CHARS = 200
_WHAT_CHARS = 160
_SUMMARY_CHARS = 300
_FILES = 8
UNATTENDED = "unattended"


@dataclass(frozen=True)
class Draft:
    """A memory to be checked and stored; `fallback` is tried when the text is refused for
    what the model wrote in it (its finish summary), `by_person` when a person typed it."""

    kind: MemoryKind
    source: Source
    text: str
    seq: int
    by_person: bool = False
    fallback: str | None = None


def _short(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


class Captures:
    """Follows a session's events and drafts the memories worth keeping from them."""

    def __init__(self) -> None:
        self.task = ""
        self.asked: dict[str, str] = {}
        self.plans: set[str] = set()
        self.files: list[str] = []
        self.checks: VerificationRan | None = None
        self.failed_calls = 0

    def observe(self, stored: StoredEvent) -> Draft | None:
        event = stored.event
        if isinstance(event, SessionStarted):
            self.task = _short(event.task, _TASK_CHARS)
        elif isinstance(event, ApprovalRequested):
            self.asked[event.call_id] = event.summary
        elif isinstance(event, PlanProposed):
            self.plans.add(event.call_id)
        elif isinstance(event, FileEdited) and event.path not in self.files:
            self.files.append(event.path)
        elif isinstance(event, VerificationRan):
            self.checks = event
        elif isinstance(event, ToolCallFinished) and not event.ok:
            self.failed_calls += 1
        elif isinstance(event, ApprovalGiven):
            return self._denial(event, stored.seq)
        elif isinstance(event, ReviewDecided) and event.action == "reject" \
                and event.feedback.strip():
            return Draft("correction", "review", f"A reviewer sent back the result of the task "
                         f'"{self.task}" and said: {event.feedback.strip()}', stored.seq,
                         by_person=True)
        elif isinstance(event, SessionFinished):
            return self._episode(event, stored.seq)
        return None

    def _denial(self, given: ApprovalGiven, seq: int) -> Draft | None:
        if given.approved or not given.reason.strip() or given.by == UNATTENDED:
            return None
        what = _short(self.asked.get(given.call_id, "a call"), _WHAT_CHARS)
        reason = given.reason.strip()
        if given.call_id in self.plans:
            return Draft("correction", "plan", f'Your user rejected the plan "{what}" for the '
                         f'task "{self.task}" and said: {reason}', seq, by_person=True)
        return Draft("correction", "denial", f'Your user refused "{what}" and said: {reason}',
                     seq, by_person=True)

    def _episode(self, finished: SessionFinished, seq: int) -> Draft:
        parts = [f'A session on the task "{self.task}" ended: {finished.status}'
                 + (f" ({_short(finished.reason, _WHAT_CHARS)})." if finished.reason else ".")]
        if self.files:
            more = len(self.files) - _FILES
            parts.append("Files changed: " + ", ".join(self.files[:_FILES])
                         + (f" and {more} more." if more > 0 else "."))
        if self.checks is not None:
            checks = self.checks
            line = f"Last check: {checks.passed} passed, {checks.failed} failed"
            if checks.new_failures:
                line += "; new failures: " + ", ".join(checks.new_failures[:3])
            parts.append(line + ".")
        if self.failed_calls:
            parts.append(f"{self.failed_calls} tool calls failed.")
        plain = " ".join(parts)
        if not finished.summary.strip():
            return Draft("episode", "episode", plain, seq)
        return Draft("episode", "episode",
                     f"{plain} Summary: {_short(finished.summary, _SUMMARY_CHARS)}", seq,
                     fallback=plain)
