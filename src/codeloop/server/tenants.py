"""Tenants (teams), their users with roles, their policy, and the server's audit log, in one
SQLite file `<data_dir>/tenants.sqlite` (mode 0600) beside the event store, or in the event
store's PostgreSQL database when there is one (tenant_db.py), shared by every server process.

Users are global names: a token maps to a user (auth.py), a user belongs to one tenant with
one role. Users with a token but no row here (tokens made before tenants existed) belong to
the `default` tenant as members, whose policy sets no limits, so older setups keep working.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

from codeloop.errors import CodeloopError
from codeloop.events import AdminActionRecorded, Event, SpendAlertRaised, parse_event_json
from codeloop.server.tenant_db import (
    Duplicate,
    NamedLock,
    PostgresTenantDb,
    SQLiteTenantDb,
    TenantDb,
)

Role = Literal["admin", "member", "viewer"]
ROLES: tuple[str, ...] = get_args(Role)
DEFAULT_TENANT = "default"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


class TenantError(CodeloopError):
    """A tenant or user that does not exist, already exists, or has a bad name."""


class TenantPolicy(BaseModel):
    """What a tenant's sessions may do; None means no limit (the server's own roots)."""

    model_config = ConfigDict(extra="forbid")

    allowed_roots: list[str] | None = None
    # fnmatch patterns over model specs, e.g. "openai:gpt-4.1*", "scripted:*".
    allowed_models: list[str] | None = None
    max_budget_usd: float | None = Field(default=None, ge=0)
    max_concurrent_sessions: int | None = Field(default=None, ge=0)
    max_usd_per_day: float | None = Field(default=None, ge=0)
    max_tokens_per_day: int | None = Field(default=None, ge=0)
    requests_per_minute: int | None = Field(default=None, ge=1)
    # The usual hourly spend an alert compares against is never taken below this.
    alert_floor_usd: float = Field(default=0.05, ge=0)


@dataclass(frozen=True)
class Member:
    user: str
    tenant: str
    role: str


@dataclass(frozen=True)
class AuditEntry:
    seq: int
    event: Event


def check_name(kind: str, name: str) -> str:
    if not _NAME.match(name):
        raise TenantError(f"bad {kind} name {name!r}",
                          "use letters, digits, '.', '_' or '-' (at most 64), starting with a "
                          "letter or digit")
    return name


class TenantStore:
    """Tenants, members and the audit log; every write is one statement or transaction."""

    def __init__(self, data_dir: Path, database_url: str | None = None) -> None:
        self.db: TenantDb = (PostgresTenantDb(database_url) if database_url
                             else SQLiteTenantDb(data_dir / "tenants.sqlite"))
        self.db.rows("INSERT INTO tenants (name, created) VALUES (?, ?) ON CONFLICT DO NOTHING",
                     (DEFAULT_TENANT, time.time()))
        # New sessions are checked against the tenant's limits and recorded under this lock.
        self.admission = NamedLock(self.db, "admission")

    def exclusive(self, name: str) -> NamedLock:
        """A lock on `name` for the block: across processes when the database is shared."""
        return NamedLock(self.db, name)

    def close(self) -> None:
        self.db.close()

    # -- tenants ----------------------------------------------------------------------------

    def tenants(self) -> list[str]:
        return [str(r[0]) for r in self.db.rows("SELECT name FROM tenants ORDER BY name")]

    def has_tenant(self, tenant: str) -> bool:
        return bool(self.db.rows("SELECT 1 FROM tenants WHERE name = ?", (tenant,)))

    def create_tenant(self, tenant: str, policy: TenantPolicy | None = None) -> None:
        check_name("tenant", tenant)
        try:
            self.db.rows(
                "INSERT INTO tenants (name, created, policy) VALUES (?, ?, ?)",
                (tenant, time.time(), (policy or TenantPolicy()).model_dump_json()))
        except Duplicate as exc:
            raise TenantError(f"tenant {tenant!r} already exists") from exc

    def policy(self, tenant: str) -> TenantPolicy:
        rows = self.db.rows("SELECT policy FROM tenants WHERE name = ?", (tenant,))
        if not rows:
            raise TenantError(f"no tenant {tenant!r}", "list them with `codeloop tenant list`")
        return TenantPolicy.model_validate_json(rows[0][0])

    def set_policy(self, tenant: str, policy: TenantPolicy) -> None:
        self.policy(tenant)  # exists
        self.db.rows("UPDATE tenants SET policy = ? WHERE name = ?",
                             (policy.model_dump_json(), tenant))

    # -- users ------------------------------------------------------------------------------

    def member(self, user: str) -> Member:
        """The user's tenant and role; a user known only by a token is a default member."""
        rows = self.db.rows("SELECT tenant, role FROM users WHERE name = ?", (user,))
        if not rows:
            return Member(user, DEFAULT_TENANT, "member")
        return Member(user, str(rows[0][0]), str(rows[0][1]))

    def known(self, user: str) -> bool:
        return bool(self.db.rows("SELECT 1 FROM users WHERE name = ?", (user,)))

    def members(self, tenant: str | None = None) -> list[Member]:
        sql, args = "SELECT name, tenant, role FROM users", []
        if tenant is not None:
            sql, args = sql + " WHERE tenant = ?", [tenant]
        return [Member(str(n), str(t), str(r))
                for n, t, r in self.db.rows(sql + " ORDER BY name", args)]

    def set_member(self, user: str, tenant: str, role: str) -> None:
        """Add the user to the tenant with the role, or change their tenant or role."""
        check_name("user", user)
        if role not in ROLES:
            raise TenantError(f"unknown role {role!r}", f"pick one of {', '.join(ROLES)}")
        self.policy(tenant)  # exists
        self.db.rows(
            "INSERT INTO users (name, tenant, role) VALUES (?, ?, ?) "
            "ON CONFLICT(name) DO UPDATE SET tenant = excluded.tenant, role = excluded.role",
            (user, tenant, role))

    def migrate(self, users: list[str]) -> list[str]:
        """Record users known only by their tokens as members of the default tenant."""
        added = [u for u in dict.fromkeys(users) if not self.known(u)]
        for user in added:
            self.db.rows("INSERT INTO users (name, tenant, role) VALUES (?, ?, 'member') "
                         "ON CONFLICT DO NOTHING", (user, DEFAULT_TENANT))
        return added

    # -- audit log --------------------------------------------------------------------------

    def record(self, event: AdminActionRecorded | SpendAlertRaised) -> int:
        rows = self.db.rows(
            "INSERT INTO audit (ts, type, tenant, data) VALUES (?, ?, ?, ?) RETURNING seq",
            (event.ts, event.type, event.tenant, event.model_dump_json()))
        return int(rows[0][0])

    def audit(self, tenant: str | None = None, after: int = 0,
              kind: str | None = None) -> list[AuditEntry]:
        sql = "SELECT seq, data FROM audit WHERE seq > ?"
        args: list[object] = [after]
        if tenant is not None:
            sql += " AND tenant = ?"
            args.append(tenant)
        if kind is not None:
            sql += " AND type = ?"
            args.append(kind)
        return [AuditEntry(int(seq), parse_event_json(data))
                for seq, data in self.db.rows(sql + " ORDER BY seq", args)]

    def alerted(self, tenant: str, hour: str) -> bool:
        return any(isinstance(e.event, SpendAlertRaised) and e.event.hour == hour
                   for e in self.audit(tenant, kind="spend_alert"))
