"""Trajectory metrics: what a session did, computed from its event log alone.

Every figure is a query over the events, so a recorded or exported session gives the same
numbers as the live one did.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from codeloop.events import (
    ApprovalRequested,
    AuxiliaryModelCall,
    BudgetWarning,
    FileEdited,
    LoopDetected,
    ModelCallFinished,
    PolicyDecided,
    SessionFinished,
    StoredEvent,
    ToolCallFinished,
    ToolCallStarted,
    UsageData,
    VerificationRan,
)

# Tools whose `path` argument names a file the model looked at.
_READING_TOOLS = frozenset({"read_file"})


@dataclass
class ModelUse:
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    cost_usd: float = 0.0

    def add(self, usage: UsageData, cost: float) -> None:
        self.calls += 1
        self.input_tokens += usage.input_tokens
        self.output_tokens += usage.output_tokens
        self.cached_tokens += usage.cache_read_tokens
        self.cost_usd = round(self.cost_usd + cost, 6)


@dataclass
class ToolUse:
    calls: int = 0
    errors: int = 0

    @property
    def error_rate(self) -> float:
        return round(self.errors / self.calls, 4) if self.calls else 0.0


@dataclass
class TrajectoryMetrics:
    """One session's figures; `to_json` is what an evaluation record carries."""

    steps: int = 0
    model_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    cost_usd: float = 0.0
    by_model: dict[str, ModelUse] = field(default_factory=dict)
    by_role: dict[str, ModelUse] = field(default_factory=dict)
    wall_s: float = 0.0
    first_edit_s: float | None = None
    tools: dict[str, ToolUse] = field(default_factory=dict)
    edits_by_strategy: dict[str, int] = field(default_factory=dict)
    edit_refusals: dict[str, int] = field(default_factory=dict)
    loop_detections: int = 0
    budget_stops: int = 0
    budget_warnings: int = 0
    policy_denials: int = 0
    approvals_asked: int = 0
    files_read: list[str] = field(default_factory=list)
    files_edited: list[str] = field(default_factory=list)
    gold_files: list[str] = field(default_factory=list)
    verification_runs: int = 0
    verification_s: float = 0.0

    @property
    def tool_calls(self) -> int:
        return sum(t.calls for t in self.tools.values())

    @property
    def tool_errors(self) -> int:
        return sum(t.errors for t in self.tools.values())

    @property
    def verification_share(self) -> float:
        return round(self.verification_s / self.wall_s, 4) if self.wall_s > 0 else 0.0

    def exploration(self) -> dict[str, float | None]:
        """Precision and recall of the files read (or edited) against the gold files."""
        if not self.gold_files:
            return {"precision": None, "recall": None}
        looked = set(self.files_read) | set(self.files_edited)
        gold = set(self.gold_files)
        hits = len(looked & gold)
        return {"precision": round(hits / len(looked), 4) if looked else 0.0,
                "recall": round(hits / len(gold), 4)}

    def to_json(self) -> dict[str, Any]:
        doc = asdict(self)
        for key in ("tools",):
            doc[key] = {name: {**asdict(use), "error_rate": use.error_rate}
                        for name, use in self.tools.items()}
        doc["tool_calls"] = self.tool_calls
        doc["tool_errors"] = self.tool_errors
        doc["tool_error_rate"] = round(self.tool_errors / self.tool_calls, 4) \
            if self.tool_calls else 0.0
        doc["verification_share"] = self.verification_share
        doc["exploration"] = self.exploration()
        return doc


def _norm(path: str) -> str:
    return path.strip().removeprefix("./").lstrip("/")


def trajectory_metrics(events: Sequence[StoredEvent],
                       gold_files: Iterable[str] = ()) -> TrajectoryMetrics:
    """Fold a session's events into its metrics; `gold_files` are the files the reference
    fix changes (for the exploration precision and recall)."""
    m = TrajectoryMetrics(gold_files=sorted({_norm(p) for p in gold_files}))
    if not events:
        return m
    start = events[0].event.ts
    by_model: dict[str, ModelUse] = defaultdict(ModelUse)
    by_role: dict[str, ModelUse] = defaultdict(ModelUse)
    tools: dict[str, ToolUse] = defaultdict(ToolUse)
    strategies: Counter[str] = Counter()
    refusals: Counter[str] = Counter()
    read: dict[str, None] = {}
    edited: dict[str, None] = {}
    steps: set[int] = set()
    for stored in events:
        e = stored.event
        if isinstance(e, ModelCallFinished):
            steps.add(e.step)
            by_model[e.model].add(e.usage, e.cost_usd)
            by_role[e.role or "agent"].add(e.usage, e.cost_usd)
        elif isinstance(e, AuxiliaryModelCall) and e.ok:
            by_model[e.model].add(e.usage, e.cost_usd)
            by_role[e.role or e.purpose or "auxiliary"].add(e.usage, e.cost_usd)
        elif isinstance(e, ToolCallStarted):
            path = (e.call.arguments or {}).get("path")
            if e.call.name in _READING_TOOLS and isinstance(path, str) and path:
                read.setdefault(_norm(path))
        elif isinstance(e, ToolCallFinished):
            use = tools[e.name]
            use.calls += 1
            if not e.ok:
                use.errors += 1
                refusal = e.data.get("refusal")
                if isinstance(refusal, str):
                    refusals[refusal] += 1
        elif isinstance(e, FileEdited):
            strategies[e.strategy] += 1
            edited.setdefault(_norm(e.path))
            if m.first_edit_s is None:
                m.first_edit_s = round(e.ts - start, 3)
        elif isinstance(e, LoopDetected):
            m.loop_detections += 1
        elif isinstance(e, BudgetWarning):
            m.budget_warnings += 1
        elif isinstance(e, PolicyDecided) and e.decision == "deny":
            m.policy_denials += 1
        elif isinstance(e, ApprovalRequested):
            m.approvals_asked += 1
        elif isinstance(e, VerificationRan):
            m.verification_runs += 1
            m.verification_s = round(m.verification_s + e.seconds, 3)
        elif isinstance(e, SessionFinished) and e.status == "budget_exceeded":
            m.budget_stops += 1
    m.wall_s = round(events[-1].event.ts - start, 3)
    m.steps = len(steps)
    m.by_model, m.by_role = dict(by_model), dict(by_role)
    m.model_calls = sum(u.calls for u in by_model.values())
    m.input_tokens = sum(u.input_tokens for u in by_model.values())
    m.output_tokens = sum(u.output_tokens for u in by_model.values())
    m.cached_tokens = sum(u.cached_tokens for u in by_model.values())
    m.cost_usd = round(sum(u.cost_usd for u in by_model.values()), 6)
    m.tools, m.edits_by_strategy, m.edit_refusals = dict(tools), dict(strategies), dict(refusals)
    m.files_read, m.files_edited = list(read), list(edited)
    return m
