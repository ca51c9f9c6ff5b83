"""Events of the server's administration: who changed a tenant, a user, a token or a quota,
and the spend alerts the meter raises. They live in the server's audit log, not a session's."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from codeloop.events.base import EventBase


class AdminActionRecorded(EventBase):
    """An administrative change, with who made it (`actor`) and what it changed."""

    type: Literal["admin_action"] = "admin_action"
    actor: str
    tenant: str
    action: str  # e.g. "tenant.create", "user.add", "token.create", "policy.set"
    target: str = ""
    details: dict[str, Any] = Field(default_factory=dict)


class SpendAlertRaised(EventBase):
    """A tenant spent more in one hour than `factor` times its usual hourly spend."""

    type: Literal["spend_alert"] = "spend_alert"
    tenant: str
    hour: str  # ISO hour (UTC) the spend fell in, e.g. "2026-11-25T21"
    spend_usd: float
    usual_usd: float
    factor: float
