"""`codeloop patch`: apply a model-style patch to a working tree with the edit engine."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import typer
from rich.table import Table

from codeloop.cli.safe_text import shown_path, terminal_console
from codeloop.edit.apply import FileChange, plan
from codeloop.edit.formats import detect, parse_patch
from codeloop.errors import CodeloopError
from codeloop.workspace.paths import confine


def _reader(root: Path):  # type: ignore[no-untyped-def]
    def read(rel: str) -> bytes | None:
        target = confine(root, rel)
        return target.read_bytes() if target.is_file() else None

    return read


def _write(root: Path, change: FileChange) -> None:
    target = confine(root, change.path)
    if change.after is None:
        target.unlink()
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.codeloop-tmp")
    tmp.write_bytes(change.after)
    if target.exists():
        os.chmod(tmp, target.stat().st_mode)
    os.replace(tmp, target)


def patch_command(
    patch_file: str = typer.Argument(..., help="The patch file, or - for standard input."),
    repo: Path = typer.Option(Path("."), "--repo", help="The tree to patch."),
    path: str | None = typer.Option(None, "--path", help="File for a diff that names none."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Check and report; write nothing."),
    as_json: bool = typer.Option(False, "--json", help="Print the outcome as JSON."),
) -> None:
    """Apply SEARCH/REPLACE blocks, a unified diff or a patch envelope: all files or none."""
    text = sys.stdin.read() if patch_file == "-" else Path(patch_file).read_text()
    if not repo.is_dir():
        raise CodeloopError(f"{repo} is not a directory", "pass the repository with --repo")
    changes = plan(parse_patch(text, default_path=path), _reader(repo))
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
