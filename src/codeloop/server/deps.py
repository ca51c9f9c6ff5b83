"""The request dependencies every route shares: the caller's user (a valid bearer token,
counted against its tenant's request rate) and their principal (tenant and role)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from codeloop.server.access import Principal, Refused
from codeloop.server.auth import TokenStore
from codeloop.server.guard import Guard


class Unauthorized(Exception):
    """No valid bearer token on the request."""


_bearer = HTTPBearer(auto_error=False, description="A token from <data_dir>/server-token or "
                                                   "<data_dir>/tokens.json")


def current_user(
    request: Request,
    creds: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> str:
    """The user whose bearer token the request carries."""
    tokens: TokenStore = request.app.state.tokens
    user = tokens.user_for(creds.credentials) if creds else None
    if user is None:
        raise Unauthorized()
    _rate_limit(request, user)
    return user


User = Annotated[str, Depends(current_user)]


def current_principal(request: Request, user: User) -> Principal:
    """The caller's user, tenant and role."""
    guard: Guard = request.app.state.service.guard
    return guard.access.principal(user)


def _rate_limit(request: Request, user: str) -> None:
    """Count the request against its tenant's requests per minute (429 when over)."""
    guard: Guard = request.app.state.service.guard
    who = guard.access.principal(user)
    if who.tenant is None:
        return
    per_minute = guard.access.tenants.policy(who.tenant).requests_per_minute
    if per_minute is None:
        return
    wait = request.app.state.limiter.hit(who.tenant, per_minute)
    if wait is not None:
        refused = Refused(f"tenant {who.tenant!r} is over its API rate (requests_per_minute: "
                          f"{per_minute})", f"retry in {wait} s")
        refused.http_status, refused.retry_after = 429, wait
        raise refused


Who = Annotated[Principal, Depends(current_principal)]
