"""The API's administration routes: tenants, users, tokens, policy, usage and the audit log."""

from __future__ import annotations

import time
from typing import Annotated, Any

from fastapi import FastAPI, Query
from fastapi import status as http_status
from pydantic import BaseModel, ConfigDict, Field

from codeloop.server.access import Forbidden
from codeloop.server.admin import Admin
from codeloop.server.deps import Who
from codeloop.server.guard import Guard
from codeloop.server.schemas import Message
from codeloop.server.tenants import Role, TenantPolicy
from codeloop.server.usage import DAY_S

_ERRORS: dict[int | str, dict[str, Any]] = {
    401: {"model": Message, "description": "Missing or unknown token"},
    403: {"model": Message, "description": "Your role does not allow it"},
    429: {"model": Message, "description": "Too many requests (see Retry-After)"},
}


class TenantIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    policy: TenantPolicy | None = None


class MemberIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    role: Role


class TokenOut(BaseModel):
    user: str
    token: str
    fingerprint: str


class UsageOut(BaseModel):
    tenant: str
    user: str
    model: str
    day: str
    calls: int
    input_tokens: int
    output_tokens: int
    cost_usd: float


class AuditOut(BaseModel):
    seq: int
    type: str
    ts: float
    event: dict[str, Any]


class PolicyIn(TenantPolicy):
    """The limits to change (only the fields given); a field given as null removes that
    limit. The same fields and bounds as the stored policy, none required."""

    alert_floor_usd: float | None = Field(default=None, ge=0)  # type: ignore[assignment]


def add_admin_routes(app: FastAPI, admin: Admin, guard: Guard) -> None:
    """Add the routes to the app, acting through `admin` and reading usage from `guard`."""

    @app.get("/tenants", responses=_ERRORS, tags=["tenants"])
    async def tenants(who: Who) -> list[dict[str, Any]]:
        """Every tenant for the operator; your own tenant otherwise."""
        names = admin.tenants.tenants() if who.is_operator else [str(who.tenant)]
        return [admin.describe(who, name) for name in names]

    @app.post("/tenants", status_code=http_status.HTTP_201_CREATED, responses=_ERRORS,
              tags=["tenants"])
    async def create_tenant(body: TenantIn, who: Who) -> dict[str, Any]:
        """Create a tenant (operator only)."""
        admin.create_tenant(who, body.name, body.policy)
        return admin.describe(who, body.name)

    @app.get("/tenants/{tenant}", responses=_ERRORS, tags=["tenants"])
    async def tenant(tenant: str, who: Who) -> dict[str, Any]:
        """A tenant's policy, users and their token fingerprints."""
        return admin.describe(who, tenant)

    @app.patch("/tenants/{tenant}/policy", responses=_ERRORS, tags=["tenants"])
    async def set_policy(tenant: str, body: PolicyIn, who: Who) -> TenantPolicy:
        """Change some of a tenant's limits (operator only); null removes a limit."""
        return admin.set_policy(who, tenant, body.model_dump(exclude_unset=True))

    @app.put("/tenants/{tenant}/users/{user}", responses=_ERRORS, tags=["tenants"])
    async def set_member(tenant: str, user: str, body: MemberIn, who: Who) -> dict[str, Any]:
        """Add a user to the tenant with a role, or change their role (tenant admin)."""
        admin.set_member(who, user, tenant, body.role)
        return admin.describe(who, tenant)

    @app.post("/tenants/{tenant}/users/{user}/tokens", status_code=http_status.HTTP_201_CREATED,
              responses=_ERRORS, tags=["tenants"])
    async def create_token(tenant: str, user: str, who: Who) -> TokenOut:
        """A new token for a user of the tenant (tenant admin); shown this once."""
        if not admin.tenants.known(user) or admin.tenants.member(user).tenant != tenant:
            raise Forbidden(f"user {user!r} is not in tenant {tenant!r}")
        token = admin.create_token(who, user)
        return TokenOut(user=user, token=token, fingerprint=admin.tokens.tokens_of(user)[-1])

    @app.delete("/tokens/{fingerprint}", responses=_ERRORS, tags=["tenants"])
    async def revoke_token(fingerprint: str, who: Who) -> dict[str, str]:
        """Revoke a token by its fingerprint (tenant admin)."""
        return {"revoked": fingerprint, "user": admin.revoke_token(who, fingerprint)}

    @app.get("/usage", responses=_ERRORS, tags=["usage"])
    async def usage(who: Who, days: Annotated[int, Query(ge=1, le=366)] = 1,
                    tenant: str | None = None) -> list[UsageOut]:
        """Calls, tokens and dollars per tenant, user, model and day (UTC) for the last
        `days` days: all tenants for the operator, your tenant for its admins and viewers,
        your own for a member."""
        user = None
        if not who.is_operator:
            if tenant not in (None, who.tenant):
                raise Forbidden(f"user {who.user!r} cannot read tenant {tenant!r}'s usage")
            tenant = who.tenant
            user = who.user if who.role == "member" else None
        since = time.time() - (days - 1) * DAY_S
        rows = guard.meter.rows(since, tenant=tenant, user=user)
        return [UsageOut(**vars(r)) for r in rows]

    @app.get("/audit", responses=_ERRORS, tags=["usage"])
    async def audit(who: Who, after: Annotated[int, Query(ge=0)] = 0,
                    tenant: str | None = None) -> list[AuditOut]:
        """Administrative changes and spend alerts: every tenant's for the operator, your
        tenant's for its admins."""
        if not who.is_operator:
            if who.role != "admin" or tenant not in (None, who.tenant):
                raise Forbidden(f"user {who.user!r} cannot read the audit log",
                                "a tenant admin reads their tenant's")
            tenant = who.tenant
        return [AuditOut(seq=e.seq, type=str(e.event.type), ts=e.event.ts,
                         event=e.event.model_dump(mode="json"))
                for e in admin.tenants.audit(tenant, after)]
