"""Options several commands share, spelled one way everywhere, and the notes that keep
older spellings working for now.

The repository is always `--repo PATH` (short `-C PATH`, as git and make spell "run in this
directory"), default the current directory.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from codeloop.cli.safe_text import markup_safe, terminal_console
from codeloop.errors import CodeloopError

HERE = Path(".")
REPO_HELP = "The repository (default: the current directory)."


def repo_option(help: str = REPO_HELP) -> Any:
    """The `--repo/-C PATH` option, with a command's own help where it says more."""
    return typer.Option("--repo", "-C", metavar="PATH", help=help, show_default=False)


Repo = Annotated[Path, repo_option()]
DataDir = Annotated[Path | None, typer.Option(
    "--data-dir", metavar="DIR",
    help="Where sessions live (default: $CODELOOP_DATA_DIR or ~/.local/share/codeloop).")]

# Older spellings: hidden from --help, still accepted, each with a note naming the new one.
RayAddress = Annotated[str | None, typer.Option(
    "--ray", metavar="ADDRESS",
    help="Run on the Ray cluster whose head is at host:port ('auto': start a local one).")]
OldRepoArgument = Annotated[Path | None, typer.Argument(hidden=True, show_default=False)]
OldPathOption = Annotated[Path | None, typer.Option("--path", "-p", hidden=True)]


def deprecated(old: str, new: str) -> None:
    """Say on standard error that a spelling is going away and which one replaces it."""
    terminal_console(stderr=True, soft_wrap=True).print(
        f"[yellow]note:[/] {markup_safe(old)} is deprecated and will be removed; "
        f"use {markup_safe(new)}")


def chosen_repo(repo: Path, old: Path | None, old_form: str) -> Path:
    """The repository `--repo` names, or the one an older spelling (`old_form`, e.g.
    "`codeloop index PATH`") named, with a note."""
    if old is None:
        return repo
    if repo != HERE:
        raise CodeloopError(f"the repository is given twice: {old} by {old_form}, {repo} by "
                            "--repo", "give it once, as --repo PATH")
    deprecated(old_form, "--repo PATH (or -C PATH)")
    return old


# `--roles/--no-roles` on `run`, `eval swebench` and `eval run`: over the config's `[roles]
# enabled` and CODELOOP_ROLES; recorded with the session's settings, so `resume` keeps it.
Roles = Annotated[bool | None, typer.Option(
    "--roles/--no-roles",
    help="Planner, coder and reviewer take turns on one plan (default: the config's "
         "[roles] enabled, or CODELOOP_ROLES).", show_default=False)]


def roles_flag(roles: bool | None) -> dict[str, Any]:
    """`--roles/--no-roles` as a settings layer (empty when neither was given)."""
    return {} if roles is None else {"roles": {"enabled": roles}}
