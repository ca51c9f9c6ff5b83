"""`codeloop index-gc`: delete code indexes whose directory no longer exists."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Annotated

import typer

from codeloop.cli.safe_text import shown_path, terminal_console

console = terminal_console()


def _size(directory: Path) -> int:
    total = 0
    for path in directory.rglob("*"):
        # Another process may delete a file (or the whole index) while we count.
        with contextlib.suppress(OSError):
            total += path.stat().st_size if path.is_file() else 0
    return total


def index_gc(
    views_only: Annotated[bool, typer.Option(
        "--views-only", help="Keep repositories' own indexes; delete only session views'.")]
        = False,
    unrecorded: Annotated[bool, typer.Option(
        "--unrecorded", help="Also delete indexes made before codeloop recorded what they "
        "index (stop older codeloop processes first).")] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Only list what would go.")]
        = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
) -> None:
    """Delete the code indexes of directories that are gone (sessions ended by a crash,
    removed checkouts); each index of a directory that still exists stays."""
    from codeloop.index import store
    from codeloop.index.registry import prune_indexes
    cache = store.cache_root()
    victims = prune_indexes(cache, views_only=views_only, unrecorded=unrecorded, dry_run=True)
    sizes = {p: _size(p) for p in victims}
    if not dry_run:
        victims = prune_indexes(cache, views_only=views_only, unrecorded=unrecorded)
    freed = sum(sizes.get(p, 0) for p in victims)
    if as_json:
        print(json.dumps({"removed": [str(p) for p in victims], "freed_bytes": freed,
                          "dry_run": dry_run}))
        return
    verb = "would delete" if dry_run else "deleted"
    for path in victims:
        console.print(verb, shown_path(path))
    console.print(f"{verb} {len(victims)} index(es), {freed / 1e6:.1f} MB")


def register(app: typer.Typer) -> None:
    app.command("index-gc")(index_gc)
