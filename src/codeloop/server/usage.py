"""Usage metered from the event log: calls, tokens and dollars per tenant, user, model and
day (UTC), and the spend alert.

A session's model calls (`model_call_finished`, `auxiliary_model_call`) are summed per
(model, hour); the sums are kept per session with the sequence number read up to, so a
later reading only reads the events appended since. A session counts for the tenant its
owner belongs to now; the operator's and the command line's sessions count for `_server`.
"""

from __future__ import annotations

import statistics
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime

from codeloop.events import AuxiliaryModelCall, ModelCallFinished, SpendAlertRaised
from codeloop.server.access import Access
from codeloop.session.store import LOCAL_OWNER, EventStore, SessionRow

SERVER_TENANT = "_server"
ALERT_FACTOR = 2.0
DAY_S = 24 * 3600
HISTORY_S = 7 * DAY_S


def hour_of(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H")


def day_start(ts: float) -> float:
    day = datetime.fromtimestamp(ts, UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    return day.timestamp()


@dataclass
class Sums:
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0

    def add(self, other: Sums) -> None:
        self.calls += other.calls
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.cost_usd += other.cost_usd

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens


@dataclass
class _SessionSums:
    seq: int = 0
    by_model_hour: dict[tuple[str, str], Sums] = field(default_factory=dict)


@dataclass(frozen=True)
class UsageRow:
    tenant: str
    user: str
    model: str
    day: str
    calls: int
    input_tokens: int
    output_tokens: int
    cost_usd: float


class UsageMeter:
    def __init__(self, store: EventStore, access: Access) -> None:
        self.store = store
        self.access = access
        self._sessions: dict[str, _SessionSums] = {}
        self._lock = threading.Lock()

    def tenant_of(self, owner: str) -> str:
        who = self.access.principal(owner)
        return SERVER_TENANT if who.tenant is None or owner == LOCAL_OWNER else who.tenant

    def _sums(self, row: SessionRow) -> _SessionSums:
        with self._lock:
            sums = self._sessions.setdefault(row.id, _SessionSums())
            if sums.seq >= row.last_seq:
                return sums
            for stored in self.store.read(row.id, sums.seq):
                event = stored.event
                sums.seq = stored.seq
                if isinstance(event, ModelCallFinished | AuxiliaryModelCall):
                    key = (event.model, hour_of(event.ts))
                    bucket = sums.by_model_hour.setdefault(key, Sums())
                    bucket.add(Sums(1, event.usage.input_tokens, event.usage.output_tokens,
                                    event.cost_usd))
            return sums

    def _buckets(self, since: float, tenant: str | None = None
                 ) -> list[tuple[str, str, str, str, Sums]]:
        """(tenant, user, model, hour, sums) for the hours from `since` on."""
        first_hour = hour_of(since)
        out = []
        for row in self.store.sessions():
            if row.updated < since:
                continue
            owner_tenant = self.tenant_of(row.owner)
            if tenant is not None and owner_tenant != tenant:
                continue
            for (model, hour), sums in self._sums(row).by_model_hour.items():
                if hour >= first_hour:
                    out.append((owner_tenant, row.owner, model, hour, sums))
        return out

    def rows(self, since: float, tenant: str | None = None,
             user: str | None = None) -> list[UsageRow]:
        """Usage per tenant, user, model and day from the day of `since` on."""
        totals: dict[tuple[str, str, str, str], Sums] = defaultdict(Sums)
        for t, u, model, hour, sums in self._buckets(day_start(since), tenant):
            if user is None or u == user:
                totals[(t, u, model, hour[:10])].add(sums)
        return [UsageRow(t, u, m, d, s.calls, s.input_tokens, s.output_tokens,
                         round(s.cost_usd, 6))
                for (t, u, m, d), s in sorted(totals.items())]

    def today(self, tenant: str, now: float | None = None) -> Sums:
        """The tenant's usage since midnight UTC."""
        total = Sums()
        for *_, sums in self._buckets(day_start(now or time.time()), tenant):
            total.add(sums)
        return total

    def hourly_spend(self, tenant: str, now: float | None = None) -> dict[str, float]:
        spend: dict[str, float] = defaultdict(float)
        for _t, _u, _m, hour, sums in self._buckets((now or time.time()) - HISTORY_S, tenant):
            spend[hour] += sums.cost_usd
        return dict(spend)

    def usual_hourly(self, tenant: str, now: float | None = None) -> float:
        """The median spend of the hours in the last 7 days (before this one) in which the
        tenant spent anything, never below the tenant's `alert_floor_usd`."""
        now = now or time.time()
        current = hour_of(now)
        past = [v for h, v in self.hourly_spend(tenant, now).items() if h < current and v > 0]
        floor = self.access.tenants.policy(tenant).alert_floor_usd
        return max(statistics.median(past) if past else 0.0, floor)

    def check_alert(self, tenant: str, now: float | None = None) -> SpendAlertRaised | None:
        """Raise (record) a spend alert once per tenant and hour when this hour's spend is
        over ALERT_FACTOR times the usual hourly spend."""
        if tenant == SERVER_TENANT:
            return None
        now = now or time.time()
        hour = hour_of(now)
        spend = self.hourly_spend(tenant, now).get(hour, 0.0)
        usual = self.usual_hourly(tenant, now)
        if spend <= ALERT_FACTOR * usual:
            return None
        # Checked and recorded under the tenant's lock: two server processes finishing runs
        # at once raise one alert, not two.
        with self.access.tenants.exclusive(f"alert:{tenant}"):
            if self.access.tenants.alerted(tenant, hour):
                return None
            alert = SpendAlertRaised(tenant=tenant, hour=hour, spend_usd=round(spend, 6),
                                     usual_usd=round(usual, 6), factor=ALERT_FACTOR)
            self.access.tenants.record(alert)
        return alert
