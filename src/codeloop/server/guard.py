"""The one object the session service asks about tenants: who sees and changes which
sessions, which repositories a session may use, and whether a new session is within its
tenant's limits. Built from the tenant store and the event store."""

from __future__ import annotations

import logging
from pathlib import Path

from codeloop.config import Settings
from codeloop.events import SpendAlertRaised
from codeloop.server.access import Access, Forbidden
from codeloop.server.quotas import admit, daily_room
from codeloop.server.tenants import TenantStore
from codeloop.server.usage import UsageMeter
from codeloop.session.store import EventStore

log = logging.getLogger(__name__)


class Guard:
    def __init__(self, tenants: TenantStore, store: EventStore) -> None:
        self.access = Access(tenants)
        self.meter = UsageMeter(store, self.access)
        self.store = store
        # Admission checks the tenant's running sessions and records the new one under this
        # lock; on PostgreSQL it serialises every server process, not only this one's threads.
        self.admission = tenants.admission

    def visible_owners(self, user: str) -> tuple[str, ...]:
        return self.access.visible_owners(user)

    def check_action(self, user: str, owner: str, action: str) -> None:
        self.access.check_action(user, owner, action)

    def check_repo(self, owner: str, repo: Path) -> None:
        self.access.check_repo(owner, repo)

    def admit(self, user: str, settings: Settings, asked_cost: float | None) -> Settings:
        """The settings a new session of `user` runs with, or a refusal naming the limit."""
        who = self.access.principal(user)
        if who.tenant is None:
            return settings
        if who.role == "viewer":
            raise Forbidden(f"user {user!r} is a viewer in tenant {who.tenant!r} and cannot "
                            "start sessions", "ask a tenant admin for the member role")
        owners = tuple({user, *(m.user for m in self.access.tenants.members(who.tenant))})
        running = sum(1 for r in self.store.sessions(owner=owners) if r.status == "running")
        return admit(who, self.access.tenants.policy(who.tenant), settings, asked_cost,
                     running, self.meter.today(who.tenant))

    def check_day(self, owner: str) -> None:
        """Refuse to run the owner's session again once their tenant's day is used up."""
        who = self.access.principal(owner)
        if who.tenant is not None:
            daily_room(who, self.access.tenants.policy(who.tenant), self.meter.today(who.tenant))

    def after_run(self, owner: str) -> SpendAlertRaised | None:
        """Look at the owner's tenant's spend once a run stops; an alert is logged too."""
        try:
            alert = self.meter.check_alert(self.meter.tenant_of(owner))
        except Exception:  # metering must never break the session's worker
            log.exception("spend check for %s failed", owner)
            return None
        if alert is not None:
            log.warning("spend alert for tenant %s: $%.4f this hour, usual $%.4f",
                        alert.tenant, alert.spend_usd, alert.usual_usd)
        return alert
