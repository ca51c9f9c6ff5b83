"""The command line. Each module in this package adds its commands through `register(app)`."""

from __future__ import annotations

import importlib
import pkgutil
import sys

import typer

from codeloop.cli.help_format import use_plain_labels
from codeloop.cli.safe_text import markup_safe, shown, terminal_console
from codeloop.errors import CodeloopError

app = typer.Typer(
    name="codeloop",
    help="An autonomous coding agent that hands back a verified diff for you to approve.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)

# Soft wrap: a long message or hint (a URL, a command to paste) is never split by a newline.
err_console = terminal_console(stderr=True, soft_wrap=True)


def _register_all() -> None:
    # Only the `*_cmds` modules add commands; the rest (the live session view, its renderer)
    # load when a command that needs them runs, so `--help` never imports a session.
    commands = [m.name for m in pkgutil.iter_modules(__path__) if m.name.endswith("_cmds")]
    for name in sorted(commands):
        module = importlib.import_module(f"{__name__}.{name}")
        register = getattr(module, "register", None)
        if register is not None:
            register(app)


_register_all()
use_plain_labels(app)


def main(argv: list[str] | None = None) -> int:
    """Entry point: run the app, printing codeloop errors without a traceback unless --debug."""
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args
    if debug:
        args.remove("--debug")
    try:
        # Standalone mode: click prints usage errors itself and exits with their code.
        app(args=args, prog_name="codeloop")
    except CodeloopError as exc:
        if debug:
            raise
        # Messages quote paths, file text and tool output: shown escaped, never markup.
        err_console.print(f"[bold red]error:[/] {markup_safe(exc.message)}")
        if exc.hint:
            err_console.print(f"[yellow]hint:[/] {markup_safe(exc.hint)}")
        return 2
    except KeyboardInterrupt:
        # A running session handles Ctrl-C itself (cli/interrupt.py): this is before one runs.
        err_console.print("interrupted")
        return 130
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            return exc.code or 0
        err_console.print(shown(exc.code))
        return 1
    return 0


def main_exit() -> None:
    raise SystemExit(main())
