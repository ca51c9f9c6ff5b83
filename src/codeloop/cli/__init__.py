"""The command line. Each module in this package adds its commands through `register(app)`."""

from __future__ import annotations

import importlib
import pkgutil
import sys

import typer
from rich.console import Console

from codeloop.errors import CodeloopError

app = typer.Typer(
    name="codeloop",
    help="An autonomous coding agent that hands back a verified diff for you to approve.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)

err_console = Console(stderr=True)


def _register_all() -> None:
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{__name__}.{info.name}")
        register = getattr(module, "register", None)
        if register is not None:
            register(app)


_register_all()


def main(argv: list[str] | None = None) -> int:
    """Entry point: run the app, printing codeloop errors without a traceback unless --debug."""
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args
    if debug:
        args.remove("--debug")
    try:
        # Without standalone mode click returns the code of `raise typer.Exit(n)`.
        code = app(args=args, standalone_mode=False)
    except CodeloopError as exc:
        if debug:
            raise
        err_console.print(f"[bold red]error:[/] {exc.message}")
        if exc.hint:
            err_console.print(f"[yellow]hint:[/] {exc.hint}")
        return 2
    except KeyboardInterrupt:
        err_console.print("interrupted; `codeloop resume ID` continues the session")
        return 130
    except SystemExit as exc:
        return int(exc.code or 0) if isinstance(exc.code, int) else 1
    except Exception as exc:  # click's usage errors and friends
        import click

        if isinstance(exc, click.exceptions.ClickException):
            exc.show()
            return exc.exit_code
        if isinstance(exc, click.exceptions.Abort):
            return 130
        raise
    return code if isinstance(code, int) else 0


def main_exit() -> None:
    raise SystemExit(main())
