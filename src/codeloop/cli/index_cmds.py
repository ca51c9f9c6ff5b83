"""`codeloop index` and `codeloop search QUERY`: the code index for people."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table
from rich.text import Text

from codeloop.cli.options import HERE, OldPathOption, OldRepoArgument, Repo, chosen_repo
from codeloop.cli.safe_text import shown, shown_path, terminal_console
from codeloop.errors import CodeloopError

if TYPE_CHECKING:
    from codeloop.index.service import RepoIndex

console = terminal_console()


class NotADirectory(CodeloopError):
    """The path given to an index command is not a directory."""


def _open(path: Path) -> RepoIndex:
    from codeloop.index.service import RepoIndex
    if not path.is_dir():
        raise NotADirectory(f"{path} is not a directory",
                            "pass the repository's root directory as --repo PATH")
    return RepoIndex(path)


def index_command(
    repo: Repo = HERE,
    old_repo: OldRepoArgument = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the figures as JSON.")] = False,
    watch: Annotated[bool, typer.Option("--watch", help="Keep the index fresh until Ctrl-C.")
                     ] = False,
) -> None:
    """Build or update the code index of a repository (incremental after the first run)."""
    index = _open(chosen_repo(repo, old_repo, "`codeloop index PATH`"))
    try:
        with console.status("indexing…") if not as_json else contextlib.nullcontext():
            stats = index.update()
        figures = {"root": str(index.root), "index_dir": str(index.dir),
                   "scanned": stats.scanned, "added": stats.added, "changed": stats.changed,
                   "removed": stats.removed, "unchanged": stats.unchanged,
                   "seconds": round(stats.seconds, 3), **index.stats()}
        if as_json:
            print(json.dumps(figures))
        else:
            table = Table(title=Text("index of ") + shown_path(index.root), show_header=False)
            for key, value in figures.items():
                table.add_row(key, shown(value))
            console.print(table)
        if watch:
            from codeloop.index.watch import watch_forever

            console.print("watching for changes (Ctrl-C stops)…")
            watch_forever(index, lambda paths: console.print(f"re-indexed {len(paths)} files"))
    finally:
        index.close()


def search_command(
    query: Annotated[str, typer.Argument(help="Words, identifiers, or a pattern with --regex.")],
    repo: Repo = HERE,
    old_path: OldPathOption = None,
    limit: Annotated[int, typer.Option("--limit", "-n", metavar="N", min=1, max=200,
                                       help="Show at most N results.")] = 10,
    symbol: Annotated[bool, typer.Option("--symbol", help="Find definitions named QUERY.")
                      ] = False,
    references: Annotated[bool, typer.Option("--references", help="Find uses of QUERY.")
                          ] = False,
    regex: Annotated[bool, typer.Option(
        "--regex", help="Search the files for a regular expression (ripgrep).")] = False,
    glob: Annotated[str | None, typer.Option(
        "--glob", metavar="PATTERN",
        help="Ranked search: only paths matching, e.g. 'src/*.py'.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the results as JSON.")] = False,
) -> None:
    """Search the code: ranked (default; one file per result, as the agent's search_code
    ranks them), definitions, references, or a regex."""
    from codeloop.index.exact import grep
    path = chosen_repo(repo, old_path, "--path/-p")
    if regex:
        matches = grep(path, query, limit=limit)
        rows = [{"path": m.path, "line": m.line, "text": m.text} for m in matches]
        _print(rows, ["path", "line", "text"], as_json)
        return
    index = _open(path)
    try:
        if symbol:
            rows = [{"path": h.path, "line": h.start_line, "kind": h.kind,
                     "name": (h.parent + "." if h.parent else "") + h.name,
                     "signature": h.signature} for h in index.find_symbol(query, limit)]
            _print(rows, ["path", "line", "kind", "name", "signature"], as_json)
        elif references:
            rows = [{"path": h.path, "line": h.line, "text": h.text.strip()}
                    for h in index.find_references(query, limit)]
            _print(rows, ["path", "line", "text"], as_json)
        else:
            _ranked(index, query, limit, glob, as_json)
    finally:
        index.close()


def _ranked(index: RepoIndex, query: str, limit: int, glob: str | None, as_json: bool) -> None:
    """The agent's `search_code` ranking (`index.code_search`), shown to a person."""
    from codeloop.index.code_search import search_code
    answer = search_code(index, query, limit, glob)
    rows: list[dict[str, object]] = [
        {"path": r.path, "start_line": r.best.start_line if r.best else None,
         "end_line": r.best.end_line if r.best else None,
         "symbol": r.best.symbol if r.best else None, "score": round(r.score, 4),
         "also": [[h.start_line, h.end_line] for h in r.others]}
        for r in answer.results]
    if rows or as_json:
        _print(rows, ["path", "start_line", "end_line", "symbol", "score"], as_json)
    else:
        console.print(Text("no results. ") + shown(answer.tried()))


def _print(rows: list[dict[str, object]], columns: list[str], as_json: bool) -> None:
    if as_json:
        print(json.dumps(rows))
        return
    if not rows:
        console.print("no results")
        return
    table = Table(*columns)
    for row in rows:
        # Paths, lines and symbols come from the repository.
        table.add_row(*(shown_path(row[c]) if c == "path" else shown(row[c]) for c in columns))
    console.print(table)


def register(app: typer.Typer) -> None:
    app.command("index")(index_command)
    app.command("search")(search_command)
