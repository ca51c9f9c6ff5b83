"""Who may do what: a request's principal (user, tenant, role) and the checks the session
service asks before it reads or changes a session or opens a repository.

Roles, within one tenant: a viewer reads the tenant's sessions and changes nothing; a member
runs and steers their own sessions; an admin reads and steers every session of the tenant
and manages its users and tokens. The server's operator (the `server-token` holder) manages
every tenant and their policy. Nobody sees another tenant's sessions: they answer 404.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from codeloop.errors import CodeloopError
from codeloop.server.auth import ADMIN_USER, visible_owners
from codeloop.server.roots import RepoNotAllowed, allowed_repo
from codeloop.server.tenants import TenantStore

OPERATOR = "operator"


class Refused(CodeloopError):
    """A request the caller's role or tenant policy does not allow (HTTP `http_status`)."""

    http_status = 403
    retry_after: int | None = None


class Forbidden(Refused):
    """The caller's role does not allow the action (HTTP 403)."""


@dataclass(frozen=True)
class Principal:
    user: str
    tenant: str | None  # None: the server's operator
    role: str

    @property
    def is_operator(self) -> bool:
        return self.tenant is None


class Access:
    """Role checks and per-tenant repository roots, read fresh from the tenant store."""

    def __init__(self, tenants: TenantStore) -> None:
        self.tenants = tenants

    def principal(self, user: str) -> Principal:
        if user == ADMIN_USER:
            return Principal(user, None, OPERATOR)
        member = self.tenants.member(user)
        return Principal(user, member.tenant, member.role)

    def visible_owners(self, user: str) -> tuple[str, ...]:
        """Whose sessions `user` reads: a member their own; an admin or viewer the whole
        tenant's; the operator their own and the command line's (auth.visible_owners)."""
        who = self.principal(user)
        if who.tenant is None or who.role == "member":
            return visible_owners(user)
        return tuple({user, *(m.user for m in self.tenants.members(who.tenant))})

    def check_action(self, user: str, owner: str, action: str) -> None:
        """Refuse a change to a session `user` can see but may not change."""
        who = self.principal(user)
        if who.role == "viewer":
            raise Forbidden(f"user {user!r} is a viewer in tenant {who.tenant!r} and cannot "
                            f"{action}", "ask a tenant admin for the member role")
        if who.role == "member" and owner != user:  # not reachable through visibility today
            raise Forbidden(f"session belongs to {owner!r}; a member can {action} only their own")

    def check_repo(self, owner: str, repo: Path) -> None:
        """Refuse a repository outside the owner's tenant roots (when the tenant has any)."""
        who = self.principal(owner)
        if who.tenant is None:
            return
        roots = self.tenants.policy(who.tenant).allowed_roots
        if roots is None:
            return
        try:
            allowed_repo(repo, [Path(r) for r in roots])
        except RepoNotAllowed as exc:
            shown = ", ".join(roots) or "(none)"
            raise RepoNotAllowed(
                f"repository {repo} is outside tenant {who.tenant!r}'s allowed roots "
                f"(allowed_roots: {shown})",
                "the server's operator sets them with `codeloop tenant set --allow-root`") from exc
