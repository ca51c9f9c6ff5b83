"""Which model a call goes to: by its purpose, the session's phase and its failed fix rounds.

A purpose maps to a role, a role to a chain of models (its own first, then the fallbacks).
The router is pure: everything it depends on comes in as `Signals`, which the session folds
from its log, so a resumed session routes its calls exactly as before.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from codeloop.llm.types import Model

RoleName = Literal["planner", "coder", "small", "reviewer", "escalate", "explorer"]
ROLES: tuple[RoleName, ...] = ("planner", "coder", "small", "reviewer", "escalate", "explorer")

Purpose = Literal["planning", "coding", "review", "compaction", "file_summary",
                  "step_classification", "commit_message", "relevance_check", "explore"]
# The phase of a session whose roles work one plan (`session.roles`); None without roles.
Phase = Literal["plan", "replan", "work", "review"]
# Work that reads and condenses rather than writes code: the small model does it.
SMALL_PURPOSES: frozenset[Purpose] = frozenset({
    "compaction", "file_summary", "step_classification", "commit_message", "relevance_check"})
# The role each purpose goes to when it is not a turn of the loop (see `Router.turn`).
ROLE_OF: Mapping[Purpose, RoleName] = {
    "planning": "planner", "coding": "coder", "review": "reviewer", "explore": "explorer",
    **{purpose: "small" for purpose in SMALL_PURPOSES}}
_REASON = {"small": "condensing work goes to the small model", "reviewer": "a review of the work",
           "planner": "a planning call", "coder": "a code-writing call",
           "explorer": "a read-only explorer started by the coder"}


@dataclass(frozen=True)
class RoleModels:
    """Each role's chain of models: its own model first, then the fallbacks in order."""

    chains: Mapping[str, tuple[Model, ...]]

    @classmethod
    def single(cls, model: Model, small: Model | None = None) -> RoleModels:
        """Every role on `model` (the small one on `small` when given); no fallback."""
        return cls({role: ((small or model) if role == "small" else model,) for role in ROLES})

    def chain(self, role: str) -> tuple[Model, ...]:
        return self.chains[role]

    def primary(self, role: str) -> Model:
        return self.chains[role][0]


@dataclass(frozen=True)
class Signals:
    """What routing depends on, as the session's log has it."""

    # No plan is being worked and nothing has been edited yet: the turn explores and plans.
    planning: bool = False
    # With roles: the phase decides the role (planner, coder, reviewer), not `planning`.
    phase: Phase | None = None
    # Fix rounds in a row whose verification showed new failures.
    failed_rounds: int = 0
    # Role -> the model a fallback moved it to: its calls start there from then on.
    held: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Route:
    """One decision: the purpose, the role that serves it, the chain to try, and why."""

    purpose: Purpose
    role: RoleName
    chain: tuple[Model, ...]
    reason: str

    @property
    def model(self) -> str:
        return self.chain[0].name


class Router:
    """Maps each call to a role and that role's chain of models."""

    def __init__(self, models: RoleModels, escalate_after: int = 3) -> None:
        self.models = models
        # 0: never escalate.
        self.escalate_after = escalate_after

    def turn(self, signals: Signals) -> Route:
        """The loop's own turn: planning, reviewing, coding, or coding escalated to the larger
        model."""
        if signals.phase in ("plan", "replan"):
            return self._route("planning", "planner", signals,
                               "a step failed: the planner revises the plan"
                               if signals.phase == "replan" else "the planner writes the plan")
        if signals.phase == "review":
            return self._route("review", "reviewer", signals,
                               "the coder called finish: the reviewer checks the whole diff")
        if signals.planning and signals.phase is None:
            return self._route("planning", "planner", signals,
                               "no plan is being worked and nothing is edited yet")
        if self.escalate_after and signals.failed_rounds >= self.escalate_after:
            return self._route("coding", "escalate", signals,
                               f"{signals.failed_rounds} failed fix rounds in a row "
                               f"(escalate_after = {self.escalate_after})")
        return self._route("coding", "coder", signals, "a code-writing turn")

    def side(self, purpose: Purpose, signals: Signals | None = None) -> Route:
        """A call beside the loop's turns (a summary, a classification, a review)."""
        role = ROLE_OF[purpose]
        return self._route(purpose, role, signals or Signals(), _REASON[role])

    def _route(self, purpose: Purpose, role: RoleName, signals: Signals, reason: str) -> Route:
        chain = self.models.chain(role)
        held = signals.held.get(role)
        names = [m.name for m in chain]
        if held in names and held != names[0]:
            # Start where the last fallback ended; the models before it come last, so a
            # provider that has recovered is still reached when the held one fails too.
            at = names.index(held)
            chain = chain[at:] + chain[:at]
            reason = f"{reason}; held on {held} since a fallback moved {role} there"
        return Route(purpose, role, chain, reason)
