"""`codeloop patch`: apply a model-style patch to a working tree with the edit engine."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from codeloop.cli.options import HERE, Repo, deprecated
from codeloop.cli.safe_text import shown_path, terminal_console
from codeloop.errors import CodeloopError

if TYPE_CHECKING:
    from codeloop.edit.apply import FileChange, Reader


# The tree is read and written through `SafeRoot`: a path is confined first (a link inside
# the tree may name a file inside it), then used with no link followed, so a link leading out
# is refused and a write replaces a file atomically, never writing through a link.
def _inside(root: Path, rel: str) -> str:
    from codeloop.workspace.paths import confine, relative
    return relative(root, confine(root, rel))


def _reader(root: Path) -> Reader:
    from codeloop.workspace.hostfs import SafeRoot
    tree = SafeRoot(root)

    def read(rel: str) -> bytes | None:
        return tree.read_if_file(_inside(root, rel))

    return read


def _write(root: Path, change: FileChange) -> None:
    from codeloop.workspace.hostfs import SafeRoot
    tree, rel = SafeRoot(root), _inside(root, change.path)
    if change.after is None:
        if tree.is_dir(rel) or not tree.remove(rel):
            raise FileNotFoundError(f"{change.path} is not a file in {root}")
        return
    tree.write_bytes(rel, change.after)


def patch_command(
    patch_file: str = typer.Argument(..., help="The patch file, or - for standard input."),
    repo: Repo = HERE,
    file: Annotated[str | None, typer.Option(
        "--file", metavar="FILE", help="The file a diff that names none applies to.")] = None,
    old_path: Annotated[str | None, typer.Option("--path", hidden=True)] = None,
    dry_run: bool = typer.Option(False, "--dry-run", help="Check and report; write nothing."),
    as_json: bool = typer.Option(False, "--json", help="Print the outcome as JSON."),
) -> None:
    """Apply SEARCH/REPLACE blocks, a unified diff or a patch envelope: all files or none."""
    from codeloop.edit.apply import plan
    from codeloop.edit.formats import detect, parse_patch
    if old_path is not None:
        deprecated("--path", "--file FILE")
        file = file or old_path
    text = sys.stdin.read() if patch_file == "-" else Path(patch_file).read_text()
    if not repo.is_dir():
        raise CodeloopError(f"{repo} is not a directory", "pass the repository as --repo PATH")
    changes = plan(parse_patch(text, default_path=file), _reader(repo))
    if not dry_run:
        for change in changes:
            if change.changed:
                _write(repo, change)
    rows = [{"path": c.path, "strategy": c.strategy, "changed": c.changed,
             "action": "delete" if c.after is None else "create" if c.before is None else "update"}
            for c in changes]
    if as_json:
        print(json.dumps({"format": detect(text.replace("\r\n", "\n")), "dry_run": dry_run,
                          "files": rows}))
        return
    table = Table(title=f"{'would apply' if dry_run else 'applied'} ({detect(text)})")
    for col in ("path", "action", "matched"):
        table.add_column(col)
    for r in rows:
        table.add_row(shown_path(r["path"]), str(r["action"]),
                      "already applied" if not r["changed"] else str(r["strategy"]))
    terminal_console().print(table)


def register(app: typer.Typer) -> None:
    app.command("patch")(patch_command)
