"""`serve` and `token`: run the HTTP + WebSocket server and the web page; manage its tokens."""

from __future__ import annotations

import ipaddress
import socket
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from codeloop.cli.options import DataDir, RayAddress
from codeloop.cli.safe_text import markup_safe, terminal_console
from codeloop.errors import CodeloopError

if TYPE_CHECKING:
    from codeloop.server.auth import TokenStore

console = terminal_console(soft_wrap=True)


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise CodeloopError(f"cannot listen on {host}:{port}: {exc.strerror}",
                            "pick another --port (0 picks a free one)") from exc
    sock.listen(128)
    return sock


def is_loopback(host: str) -> bool:
    """Whether `host` is a loopback address (127.0.0.0/8, ::1) or `localhost`."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:  # a host name: it may resolve to any interface
        return False


def allowed_roots(flags: list[Path]) -> list[Path]:
    """--allow-root values plus `[server] allowed_roots`; the current directory if none."""
    from codeloop.config import load_settings
    configured = [Path(r).expanduser() for r in load_settings().server.allowed_roots]
    roots = [*flags, *configured] or [Path.cwd()]
    for root in roots:
        if not root.is_dir():
            raise CodeloopError(f"allowed root {root} is not a directory",
                                "pass --allow-root with an existing directory")
    return roots


def _first_contact(url: str, tokens: TokenStore) -> str:
    """How to open the page. The admin token goes into the URL's fragment, which the browser
    never sends (the page moves it to sessionStorage and clears it from the address bar), but
    only on a terminal: output kept in a log or a pipe is often read by others than the token
    file's owner, so there the line says where the token is instead."""
    where = markup_safe(tokens.admin_path)
    if sys.stdout.isatty():
        return (f"open the page: {url}#token={tokens.admin_token}  "
                f"[dim](admin token from {where})[/]")
    return (f"admin token in {where} (mode 0600): open {markup_safe(url)} and paste it when "
            "the page asks (or add #token=TOKEN to the URL)")


def register(app: typer.Typer) -> None:
    @app.command()
    def serve(
        host: Annotated[str, typer.Option(help="Address to listen on; other than loopback "
                                               "needs --allow-remote.")] = "127.0.0.1",
        port: Annotated[int, typer.Option(help="Port (0 picks a free one).")] = 8765,
        data: DataDir = None,
        per_user: Annotated[int, typer.Option(help="Sessions one user may run at once.")] = 2,
        workers: Annotated[int, typer.Option(help="Sessions the server runs at once.")] = 16,
        allow_root: Annotated[list[Path] | None, typer.Option(
            "--allow-root", metavar="DIR", help="A directory whose repositories sessions may open "
                                 "(repeatable; default: the current directory).")] = None,
        allow_remote: Annotated[bool, typer.Option(
            "--allow-remote", help="Listen on an address other than loopback.")] = False,
        ray: RayAddress = None,
    ) -> None:
        """Serve the API and the web page; sessions left running are resumed."""
        from codeloop.config import data_dir as default_data_dir
        if not is_loopback(host) and not allow_remote:
            terminal_console(stderr=True).print(
                f"refusing to listen on {markup_safe(host)}: anyone who can reach it and holds a token could "
                "run commands on this machine. Pass --allow-remote to do it anyway, or use "
                "--host 127.0.0.1 (and an SSH tunnel or a reverse proxy with TLS).")
            raise typer.Exit(2)
        import uvicorn

        from codeloop.server.app import create_app

        base = data or default_data_dir()
        roots = allowed_roots(allow_root or [])
        pg_url = None
        if ray is not None:
            from codeloop.fleet.sessions import require_database_url
            from codeloop.session.stores import database_url

            pg_url = require_database_url(database_url())  # before anything starts
        app_ = create_app(base, allowed_roots=roots, per_user=per_user, max_workers=workers)
        if ray is not None and pg_url is not None:
            from codeloop.fleet.sessions import serve_on_ray

            serve_on_ray(app_.state.service, ray, pg_url)
            console.print(f"sessions run on the Ray cluster at {markup_safe(ray)}")
        sock = _bind(host, port)
        bound_host, bound_port = sock.getsockname()[:2]
        shown = f"[{bound_host}]" if ":" in bound_host else bound_host
        url = f"http://{shown}:{bound_port}/"
        console.print(f"codeloop server on [bold]{markup_safe(url)}[/]")
        console.print(_first_contact(url, app_.state.tokens))
        console.print("repositories allowed under: "
                      + ", ".join(str(r) for r in app_.state.service.roots))
        if not is_loopback(host):
            console.print(f"[yellow]warning: listening on {host} (--allow-remote): anyone who "
                          "can reach it and holds a token can run commands on this machine[/]")
        config = uvicorn.Config(app_, log_level="warning", ws="auto")
        uvicorn.Server(config).run(sockets=[sock])

    @app.command()
    def token(
        user: Annotated[str, typer.Argument(help="The user the new token belongs to.")],
        tenant: Annotated[str | None, typer.Option(
            "--tenant", metavar="NAME",
            help="Put a new user in this tenant (default: the `default` tenant).")] = None,
        role: Annotated[str, typer.Option(help="A new user's role: admin, member or "
                                               "viewer.")] = "member",
        data: DataDir = None,
    ) -> None:
        """Make a new API token for a user of a tenant (recorded in the audit log)."""
        from codeloop.cli.tenant_cmds import cli_operator, open_admin
        from codeloop.server.tenants import DEFAULT_TENANT

        admin = open_admin(data)
        if tenant is not None or not admin.tenants.known(user):
            admin.set_member(cli_operator(), user, tenant or DEFAULT_TENANT, role)
        print(admin.create_token(cli_operator(), user))
        terminal_console(stderr=True).print(
            f"[dim]stored in {admin.tokens.location}[/]")
