"""Per-role and per-step budgets: each a share (`[roles]`) of the session's own budgets.

Pure functions of the folded state, so `codeloop show`, the web view and the conductor that
enforces them (`session.plan_exec`) agree. A limit of 0 means unlimited, as in `[budgets]`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from codeloop.config_tables import Budgets, RolesSettings
from codeloop.planner.dag import current_step
from codeloop.session.resume import session_settings
from codeloop.session.roles_state import StepUse, step_key
from codeloop.session.state import SessionState

# The roles a budget is kept for; the escalated coder spends the coder's budget.
BUDGET_ROLES = ("planner", "coder", "reviewer", "explorer")
_ROLE_OF = {"escalate": "coder"}


@dataclass(frozen=True)
class ShareUse:
    """What one role (or the current step) used of its share of the session's budgets."""

    name: str
    turns: int
    turn_limit: int
    tokens: int
    token_limit: int
    cost_usd: float
    cost_limit: float

    @property
    def spent(self) -> str | None:
        """The first of its budgets that is spent ("turns", "tokens", "cost_usd"), if any."""
        for budget, used, limit in (("turns", self.turns, self.turn_limit),
                                    ("tokens", self.tokens, self.token_limit),
                                    ("cost_usd", self.cost_usd, self.cost_limit)):
            if limit > 0 and used >= limit:
                return budget
        return None

    def as_dict(self) -> dict[str, object]:
        return {"name": self.name, "turns": self.turns, "turn_limit": self.turn_limit,
                "tokens": self.tokens, "token_limit": self.token_limit,
                "cost_usd": round(self.cost_usd, 6), "cost_limit": round(self.cost_limit, 6),
                "spent": self.spent}


def _share(limit: float, share: float) -> float:
    return limit * share if limit > 0 else 0.0


def _turns(limit: int, share: float) -> int:
    return max(1, math.floor(limit * share)) if limit > 0 else 0


def role_use(state: SessionState, role: str, budgets: Budgets, roles: RolesSettings
             ) -> ShareUse:
    """What `role` used (all its models) against its share of the session's budgets."""
    turns = tokens = 0
    cost = 0.0
    for (_model, used_by), usage in state.routing.usage.items():
        if _ROLE_OF.get(used_by, used_by) == role:
            turns += usage.calls
            tokens += usage.input_tokens + usage.output_tokens
            cost += usage.cost_usd
    share = float(getattr(roles, f"{role}_share"))
    return ShareUse(role, turns, _turns(budgets.max_steps, share), tokens,
                    int(_share(budgets.max_tokens, share)), cost,
                    _share(budgets.max_cost_usd, share))


def step_use(state: SessionState, budgets: Budgets, roles: RolesSettings) -> ShareUse | None:
    """The step being worked against its share, or None when no step is in progress."""
    plan = state.plan
    step = current_step(plan) if plan is not None else None
    if plan is None or step is None:
        return None
    use = state.roles.step_use.get(step_key(plan, step.id), StepUse())
    share = roles.step_share
    return ShareUse(f"step {step.id}", use.turns, _turns(budgets.max_steps, share), use.tokens,
                    int(_share(budgets.max_tokens, share)), use.cost_usd,
                    _share(budgets.max_cost_usd, share))


def all_uses(state: SessionState, budgets: Budgets, roles: RolesSettings) -> list[ShareUse]:
    """Every role's use, then the current step's (what `show` and the web view list)."""
    uses = [role_use(state, role, budgets, roles) for role in BUDGET_ROLES]
    step = step_use(state, budgets, roles)
    return [*uses, *([step] if step is not None else [])]


def role_budget_rows(state: SessionState) -> list[dict[str, object]]:
    """The rows `codeloop show` and the web view list; none for a session without roles."""
    if state.started is None:
        return []
    settings = session_settings(state)
    if not settings.roles.enabled:
        return []
    return [u.as_dict() for u in all_uses(state, settings.budgets, settings.roles)]
