"""Budget checks: pure functions of the state and the limits."""

from __future__ import annotations

from dataclasses import dataclass

from codeloop.config_tables import Budgets
from codeloop.session.state import SessionState


@dataclass(frozen=True)
class BudgetUse:
    budget: str
    used: float
    limit: float


@dataclass(frozen=True)
class BudgetVerdict:
    exceeded: BudgetUse | None
    warnings: list[BudgetUse]


def budget_uses(state: SessionState, budgets: Budgets) -> list[BudgetUse]:
    return [
        BudgetUse("steps", state.steps, budgets.max_steps),
        BudgetUse("cost_usd", round(state.cost_usd, 6), budgets.max_cost_usd),
        BudgetUse("tokens", state.total_tokens, budgets.max_tokens),
        BudgetUse("wall_clock_s", round(state.active_s, 3), budgets.wall_clock_s),
    ]


def check_budgets(state: SessionState, budgets: Budgets) -> BudgetVerdict:
    """Which budget (if any) is spent, and which newly crossed the warning line."""
    uses = budget_uses(state, budgets)
    exceeded = next((u for u in uses if u.limit > 0 and u.used >= u.limit), None)
    warnings = [
        u for u in uses
        if u.limit > 0 and u.used >= budgets.warn_fraction * u.limit
        and u.budget not in state.warned_budgets
    ]
    return BudgetVerdict(exceeded=exceeded, warnings=warnings)


def warning_text(use: BudgetUse) -> str:
    return (
        f"Budget warning: {use.budget} is at {use.used:g} of {use.limit:g}. Wrap up: finish the "
        "current change, verify it, and call finish with a summary."
    )
