"""A tenant's limits on a new session, checked by the server before the session is recorded.

Refusals name the limit (the policy key) so the user knows which one to ask about: a
repository or model outside the policy or a budget above the cap is 403; too many sessions
at once or the day's dollars or tokens spent is 429, with Retry-After for the daily ones.
A session's budgets are lowered to what the tenant has left today, so a session started
under the limit cannot run far past it either.
"""

from __future__ import annotations

import fnmatch
import time

from codeloop.config import Settings
from codeloop.config_tables import ModelChoice
from codeloop.server.access import Principal, Refused
from codeloop.server.tenants import TenantPolicy
from codeloop.server.usage import DAY_S, Sums, day_start


class QuotaExceeded(Refused):
    """A tenant limit refuses the request; `http_status` is 403 or 429."""

    def __init__(self, message: str, hint: str = "", *, status: int = 403,
                 retry_after: int | None = None) -> None:
        super().__init__(message, hint)
        self.http_status = status
        self.retry_after = retry_after


_HINT = "ask the server's operator to raise it (`codeloop tenant set`)"


def model_specs(settings: Settings) -> list[str]:
    """Every model the session could call: the main one, each role's, escalation, fallbacks."""
    m = settings.models
    choices = [settings.model, m.planner, m.coder, m.small, m.reviewer, m.escalate, *m.fallback]
    return [c.model if isinstance(c, ModelChoice) else c for c in choices if c]


def admit(who: Principal, policy: TenantPolicy, settings: Settings, asked_cost: float | None,
          running: int, today: Sums, now: float | None = None) -> Settings:
    """The settings the session may run with, or QuotaExceeded naming the limit."""
    tenant = who.tenant
    if policy.allowed_models is not None:
        patterns = policy.allowed_models
        for spec in model_specs(settings):
            if not any(fnmatch.fnmatchcase(spec, p) for p in patterns):
                raise QuotaExceeded(f"model {spec!r} is not allowed for tenant {tenant!r} "
                                    f"(allowed_models: {', '.join(patterns) or '(none)'})", _HINT)
    budgets = settings.budgets
    cost_cap = budgets.max_cost_usd
    if policy.max_budget_usd is not None:
        if asked_cost is not None and asked_cost > policy.max_budget_usd:
            raise QuotaExceeded(f"a session budget of ${asked_cost:g} is over tenant "
                                f"{tenant!r}'s max budget per session (max_budget_usd: "
                                f"${policy.max_budget_usd:g})",
                                f"ask for at most ${policy.max_budget_usd:g}, or {_HINT}")
        cost_cap = min(cost_cap, policy.max_budget_usd)
    if policy.max_concurrent_sessions is not None and running >= policy.max_concurrent_sessions:
        raise QuotaExceeded(f"tenant {tenant!r} already runs {running} sessions (max_concurrent_"
                            f"sessions: {policy.max_concurrent_sessions})",
                            "wait for one to finish, pause or cancel one", status=429)
    cost_left, tokens_left = daily_room(who, policy, today, now)
    lowered = budgets.model_copy(update={"max_cost_usd": min(cost_cap, cost_left),
                                         "max_tokens": min(budgets.max_tokens, tokens_left)})
    return settings.model_copy(update={"budgets": lowered})


def daily_room(who: Principal, policy: TenantPolicy, today: Sums,
               now: float | None = None) -> tuple[float, int]:
    """The dollars and tokens the tenant has left today, or QuotaExceeded (429, Retry-After
    until midnight UTC) when either is used up."""
    tenant = who.tenant
    now = time.time() if now is None else now
    until_midnight = max(1, int(day_start(now) + DAY_S - now))
    cost_left, tokens_left = float("inf"), 2**62
    if policy.max_usd_per_day is not None:
        cost_left = policy.max_usd_per_day - today.cost_usd
        if cost_left <= 0:
            raise QuotaExceeded(f"tenant {tenant!r} spent ${today.cost_usd:.4f} today (max_usd_"
                                f"per_day: ${policy.max_usd_per_day:g})",
                                "the limit resets at midnight UTC", status=429,
                                retry_after=until_midnight)
    if policy.max_tokens_per_day is not None:
        tokens_left = policy.max_tokens_per_day - today.tokens
        if tokens_left <= 0:
            raise QuotaExceeded(f"tenant {tenant!r} used {today.tokens} tokens today (max_tokens_"
                                f"per_day: {policy.max_tokens_per_day})",
                                "the limit resets at midnight UTC", status=429,
                                retry_after=until_midnight)
    return cost_left, tokens_left
