"""`--help` without type noise or hidden arguments: typer labels each parameter with its Python type (`<bool>` on
every flag, `--help` included, `<str>`, `<path>`); a person needs the value's placeholder.

A flag and an argument get no label (the argument's name is its placeholder); an option that
takes a value gets its `metavar`, or its name in capitals as argparse does (`--port PORT`).
"""

from __future__ import annotations

from typing import Any

import typer
from typer.core import TyperCommand, TyperGroup


def _label(param: Any) -> str | None:
    if param.param_type_name != "option" or getattr(param, "is_flag", False):
        return None
    return str(param.metavar or (param.name or "value").upper())


def _without_types(params: list[Any]) -> None:
    for param in params:
        # The renderer asks the parameter how to label its type; this answer is ours.
        param.display_type_rich = lambda *_, _param=param, **__: _label(_param)


class HelpCommand(TyperCommand):
    """A command whose help labels values by placeholder, not by type, and whose usage line
    leaves out hidden arguments (older spellings kept working for now)."""

    def format_help(self, ctx: Any, formatter: Any) -> None:
        _without_types(self.get_params(ctx))
        super().format_help(ctx, formatter)

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if not getattr(param, "hidden", False):
                pieces.extend(param.get_usage_pieces(ctx))
        return pieces


class HelpGroup(TyperGroup):
    """A command group whose help labels values by placeholder, not by type."""

    def format_help(self, ctx: Any, formatter: Any) -> None:
        _without_types(self.get_params(ctx))
        super().format_help(ctx, formatter)


def use_plain_labels(app: typer.Typer) -> None:
    """Make every command and group of `app` (registered so far) render its help so."""
    app.info.cls = HelpGroup
    for command in app.registered_commands:
        if command.cls in (None, TyperCommand):  # typer's default, not a class of our own
            command.cls = HelpCommand
    for group in app.registered_groups:
        group.cls = HelpGroup
        if group.typer_instance is not None:
            use_plain_labels(group.typer_instance)
