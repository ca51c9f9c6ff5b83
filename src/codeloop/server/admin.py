"""Administration of tenants, users, tokens and policy; every change is recorded in the
audit log with who made it. Used by the API (the caller's token decides) and the CLI (the
person holding the data directory is the operator)."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from codeloop.events import AdminActionRecorded
from codeloop.server.access import Access, Forbidden, Principal
from codeloop.server.auth import RESERVED_USERS, TokenStore, fingerprint
from codeloop.server.tenants import TenantError, TenantPolicy, TenantStore


class Admin:
    def __init__(self, tenants: TenantStore, tokens: TokenStore) -> None:
        self.tenants = tenants
        self.tokens = tokens
        self.access = Access(tenants)

    # -- who may ---------------------------------------------------------------------------

    def _operator(self, who: Principal, action: str) -> None:
        if not who.is_operator:
            raise Forbidden(f"only the server's operator can {action}",
                            "the operator holds <data_dir>/server-token")

    def _tenant_admin(self, who: Principal, tenant: str, action: str) -> None:
        if who.is_operator or (who.tenant == tenant and who.role == "admin"):
            return
        raise Forbidden(f"user {who.user!r} ({who.role} in tenant {who.tenant!r}) cannot "
                        f"{action} in tenant {tenant!r}", "a tenant admin or the operator can")

    def may_read(self, who: Principal, tenant: str) -> None:
        """The operator reads every tenant; a tenant's own users read theirs."""
        if not (who.is_operator or who.tenant == tenant):
            raise Forbidden(f"user {who.user!r} cannot read tenant {tenant!r}")

    def _audit(self, who: Principal, tenant: str, action: str, target: str = "",
               **details: Any) -> None:
        self.tenants.record(AdminActionRecorded(actor=who.user, tenant=tenant, action=action,
                                                target=target, details=details))

    # -- actions ---------------------------------------------------------------------------

    def migrate(self) -> list[str]:
        """Put users who hold a token but no tenant into the default tenant (audited)."""
        added = self.tenants.migrate(self.tokens.users())
        for user in added:
            self._audit(Principal("system", None, "operator"), "default", "user.migrate",
                        user, role="member")
        return added

    def create_tenant(self, who: Principal, name: str, policy: TenantPolicy | None) -> None:
        self._operator(who, "create tenants")
        self.tenants.create_tenant(name, policy)
        self._audit(who, name, "tenant.create", name,
                    policy=(policy or TenantPolicy()).model_dump())

    def set_policy(self, who: Principal, tenant: str, changes: dict[str, Any]) -> TenantPolicy:
        """Change some of the tenant's limits (a None value removes the limit)."""
        self._operator(who, "change a tenant's policy")
        old = self.tenants.policy(tenant)
        try:
            new = TenantPolicy.model_validate({**old.model_dump(), **changes})
        except ValidationError as exc:
            raise TenantError(f"bad policy for tenant {tenant!r}: {exc.errors()[0]['msg']} "
                              f"({'.'.join(map(str, exc.errors()[0]['loc']))})",
                              f"limits are: {', '.join(TenantPolicy.model_fields)}") from exc
        self.tenants.set_policy(tenant, new)
        before, after = old.model_dump(), new.model_dump()
        changed = {k: {"from": before[k], "to": after[k]} for k in after if before[k] != after[k]}
        self._audit(who, tenant, "policy.set", tenant, changes=changed)
        return new

    def set_member(self, who: Principal, user: str, tenant: str, role: str) -> None:
        self._tenant_admin(who, tenant, "add or change users")
        if user in RESERVED_USERS:
            raise TenantError(f"{user!r} is reserved", "pick another user name")
        if self.tenants.known(user):
            current = self.tenants.member(user)
            if current.tenant != tenant:
                # Moving a user between tenants takes both tenants' admin: the operator.
                self._operator(who, f"move user {user!r} out of tenant {current.tenant!r}")
        if not self.tenants.has_tenant(tenant):
            raise TenantError(f"no tenant {tenant!r}", "create it with `codeloop tenant add`")
        self.tenants.set_member(user, tenant, role)
        self._audit(who, tenant, "user.set", user, role=role)

    def create_token(self, who: Principal, user: str) -> str:
        if not self.tenants.known(user):
            raise TenantError(f"no user {user!r}",
                              "add them first: `codeloop tenant user USER --tenant T --role R`")
        tenant = self.tenants.member(user).tenant
        self._tenant_admin(who, tenant, "make tokens")
        token = self.tokens.create(user)
        self._audit(who, tenant, "token.create", user, fingerprint=fingerprint(token))
        return token

    def revoke_token(self, who: Principal, token_fingerprint: str) -> str:
        users = {fp: u for u in self.tokens.users() for fp in self.tokens.tokens_of(u)}
        user = users.get(token_fingerprint)
        if user is None:
            raise TenantError(f"no token with fingerprint {token_fingerprint!r}")
        tenant = self.tenants.member(user).tenant
        self._tenant_admin(who, tenant, "revoke tokens")
        self.tokens.revoke(token_fingerprint)
        self._audit(who, tenant, "token.revoke", user, fingerprint=token_fingerprint)
        return user

    def describe(self, who: Principal, tenant: str) -> dict[str, Any]:
        self.may_read(who, tenant)
        # Token fingerprints are for those who can revoke them.
        admin = who.is_operator or who.role == "admin"
        return {"name": tenant, "policy": self.tenants.policy(tenant).model_dump(),
                "users": [{"user": m.user, "role": m.role,
                           "tokens": self.tokens.tokens_of(m.user) if admin else []}
                          for m in self.tenants.members(tenant)]}
