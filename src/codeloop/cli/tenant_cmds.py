"""`tenant`, `usage` and `audit`: manage the server's tenants, users and limits from the data
directory (whoever holds it is the server's operator), and read usage and the audit log.
Every change is recorded in the audit log with the operating system user who made it."""

from __future__ import annotations

import getpass
import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from codeloop.cli.options import DataDir
from codeloop.cli.safe_text import markup_safe, terminal_console

if TYPE_CHECKING:
    from codeloop.server.access import Principal
    from codeloop.server.admin import Admin

console = terminal_console(soft_wrap=True)
tenant_app = typer.Typer(help="Tenants (teams), their users and their limits.",
                         no_args_is_help=True)

JsonOut = Annotated[bool, typer.Option("--json", help="Print JSON.")]
TenantOpt = Annotated[str | None, typer.Option("--tenant", metavar="NAME",
                                               help="Only this tenant.")]


def open_admin(data: Path | None) -> Admin:
    from codeloop.config import data_dir as default_data_dir
    from codeloop.server.admin import Admin
    from codeloop.server.auth import TokenStore
    from codeloop.server.tenants import TenantStore
    from codeloop.session.stores import database_url
    base = data or default_data_dir()
    tenants = TenantStore(base, database_url())
    admin = Admin(tenants, TokenStore(base, tenants.db))
    admin.migrate()
    return admin


def cli_operator() -> Principal:
    """The person at the command line, named in the audit log by their system user."""
    from codeloop.server.access import Principal
    return Principal(f"cli:{getpass.getuser()}", None, "operator")


def _print_json(data: Any) -> None:
    print(json.dumps(data, indent=2, sort_keys=True))


@tenant_app.command("list")
def list_tenants(data: DataDir = None, json_out: JsonOut = False) -> None:
    """Every tenant with its limits and users."""
    admin = open_admin(data)
    described = [admin.describe(cli_operator(), t) for t in admin.tenants.tenants()]
    if json_out:
        _print_json(described)
        return
    for tenant in described:
        limits = {k: v for k, v in tenant["policy"].items() if v is not None}
        users = ", ".join(f"{u['user']} ({u['role']})" for u in tenant["users"]) or "no users"
        console.print(f"[bold]{markup_safe(tenant['name'])}[/]  {markup_safe(users)}")
        console.print(f"  [dim]{markup_safe(json.dumps(limits, sort_keys=True))}[/]")


@tenant_app.command("show")
def show(name: Annotated[str, typer.Argument(help="The tenant.")], data: DataDir = None,
         json_out: JsonOut = False) -> None:
    """A tenant's limits, users, roles and token fingerprints."""
    described = open_admin(data).describe(cli_operator(), name)
    if json_out:
        _print_json(described)
        return
    console.print(f"[bold]{markup_safe(name)}[/]")
    for key, value in described["policy"].items():
        console.print(f"  {key}: {markup_safe(json.dumps(value))}")
    for user in described["users"]:
        console.print(f"  {markup_safe(user['user'])} ({user['role']}) tokens: "
                      f"{', '.join(user['tokens']) or '-'}")


@tenant_app.command("add")
def add(name: Annotated[str, typer.Argument(help="The new tenant's name.")],
        data: DataDir = None) -> None:
    """Create a tenant (with no limits until `tenant set`)."""
    open_admin(data).create_tenant(cli_operator(), name, None)
    console.print(f"tenant {markup_safe(name)} created")


@tenant_app.command("set")
def set_policy(
    name: Annotated[str, typer.Argument(help="The tenant.")],
    allow_root: Annotated[list[Path] | None, typer.Option(
        "--allow-root", metavar="DIR", help="Replace the roots its repositories must be in "
        "(repeatable; inside the server's own roots too).")] = None,
    allow_model: Annotated[list[str] | None, typer.Option(
        "--allow-model", metavar="PATTERN", help="Replace the models it may use "
        "(repeatable; shell patterns such as 'openai:gpt-4.1*').")] = None,
    max_budget_usd: Annotated[float | None, typer.Option(
        help="Most dollars one session may budget.")] = None,
    max_sessions: Annotated[int | None, typer.Option(
        help="Most sessions running at once.")] = None,
    max_usd_per_day: Annotated[float | None, typer.Option(
        help="Dollars per day (UTC).")] = None,
    max_tokens_per_day: Annotated[int | None, typer.Option(
        help="Tokens per day (UTC).")] = None,
    requests_per_minute: Annotated[int | None, typer.Option(
        help="API requests per minute.")] = None,
    alert_floor_usd: Annotated[float | None, typer.Option(
        help="The least usual hourly spend a spend alert compares against.")] = None,
    clear: Annotated[list[str] | None, typer.Option(
        "--clear", metavar="LIMIT", help="Remove a limit by its name, e.g. max_usd_per_day "
        "(repeatable).")] = None,
    data: DataDir = None,
) -> None:
    """Change a tenant's limits; the ones not named stay as they are."""
    changes: dict[str, Any] = {
        "allowed_roots": [str(p.expanduser().resolve()) for p in allow_root] if allow_root
        else None,
        "allowed_models": allow_model or None, "max_budget_usd": max_budget_usd,
        "max_concurrent_sessions": max_sessions, "max_usd_per_day": max_usd_per_day,
        "max_tokens_per_day": max_tokens_per_day, "requests_per_minute": requests_per_minute,
        "alert_floor_usd": alert_floor_usd,
    }
    changes = {k: v for k, v in changes.items() if v is not None}
    changes.update({k: None for k in clear or []})
    policy = open_admin(data).set_policy(cli_operator(), name, changes)
    console.print(markup_safe(policy.model_dump_json(indent=2)))


@tenant_app.command("user")
def user(
    name: Annotated[str, typer.Argument(help="The user.")],
    tenant: Annotated[str, typer.Option("--tenant", metavar="NAME", help="Their tenant.")],
    role: Annotated[str, typer.Option(help="Their role: admin, member or viewer.")] = "member",
    data: DataDir = None,
) -> None:
    """Add a user to a tenant with a role, or change it; `codeloop token USER` then makes
    their token."""
    open_admin(data).set_member(cli_operator(), name, tenant, role)
    console.print(f"{markup_safe(name)} is {role} in {markup_safe(tenant)}")


@tenant_app.command("revoke")
def revoke(fingerprint: Annotated[str, typer.Argument(help="The token's fingerprint "
                                                            "(`tenant show`).")],
           data: DataDir = None) -> None:
    """Revoke a token."""
    owner = open_admin(data).revoke_token(cli_operator(), fingerprint)
    console.print(f"revoked {markup_safe(owner)}'s token {markup_safe(fingerprint)}")


def register(app: typer.Typer) -> None:
    app.add_typer(tenant_app, name="tenant")

    @app.command()
    def usage(
        data: DataDir = None, tenant: TenantOpt = None,
        user: Annotated[str | None, typer.Option("--user", metavar="NAME",
                                                 help="Only this user.")] = None,
        days: Annotated[int, typer.Option(help="Days back (UTC), today included.")] = 1,
        json_out: JsonOut = False,
    ) -> None:
        """Calls, tokens and dollars per tenant, user, model and day, from the event log."""
        from codeloop.config import data_dir as default_data_dir
        from codeloop.server.guard import Guard
        from codeloop.server.usage import DAY_S
        from codeloop.session.stores import open_event_store
        base = data or default_data_dir()
        guard = Guard(open_admin(base).tenants, open_event_store(base))
        rows = guard.meter.rows(time.time() - (days - 1) * DAY_S, tenant=tenant, user=user)
        if json_out:
            _print_json([vars(r) for r in rows])
            return
        for r in rows:
            console.print(f"{r.day}  {markup_safe(r.tenant)}/{markup_safe(r.user)}  "
                          f"{markup_safe(r.model)}  calls {r.calls}  tokens "
                          f"{r.input_tokens}+{r.output_tokens}  ${r.cost_usd:.4f}")
        if not rows:
            console.print("no model calls in that time")

    @app.command()
    def audit(data: DataDir = None, tenant: TenantOpt = None, json_out: JsonOut = False) -> None:
        """Who changed which tenant, user, token or limit, and the spend alerts."""
        entries = open_admin(data).tenants.audit(tenant)
        if json_out:
            _print_json([{"seq": e.seq, "type": str(e.event.type),
                          "event": e.event.model_dump(mode="json")} for e in entries])
            return
        for entry in entries:
            fields = entry.event.model_dump(mode="json", exclude={"v", "ts", "type"})
            console.print(f"{entry.seq:>5}  {time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime(entry.event.ts))}"
                          f"  {entry.event.type}  {markup_safe(json.dumps(fields, sort_keys=True))}")
