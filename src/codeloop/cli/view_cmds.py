"""`codeloop view FILE`: a trajectory as a self-contained HTML page, opened in a browser."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from codeloop.cli.safe_text import shown_path, terminal_console
from codeloop.errors import CodeloopError

console = terminal_console()


def write_viewer(trajectory: Path, out: Path) -> None:
    """Read a trajectory file and write its viewer page to `out`."""
    from codeloop.server.viewer_page import standalone_viewer
    from codeloop.session.export import read_trajectory
    doc = read_trajectory(trajectory)
    if out.resolve() == trajectory.resolve():
        raise CodeloopError(f"{trajectory} would be overwritten by its own page", "pass --out FILE")
    page = standalone_viewer(doc, f"codeloop trajectory: {trajectory.name}")
    try:
        out.write_text(page, encoding="utf-8")
    except OSError as exc:
        raise CodeloopError(f"cannot write {out} ({exc.strerror})",
                            "pass --out a file in a directory you can write to") from exc


def view(
    file: Annotated[Path, typer.Argument(metavar="FILE", help="A trajectory written by "
                                         "`codeloop export` or `eval --trajectories`.")],
    out: Annotated[Path | None, typer.Option(
        "--out", "-o", metavar="FILE", help="The page to write (default: FILE with .html).")] = None,
    open_page: Annotated[bool, typer.Option(
        "--open", help="Open the page in the default browser.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print where the page went as JSON.")] = False,
) -> None:
    """Write a trajectory's viewer page (timeline, tool calls, diffs, cost per step): one HTML
    file with the trajectory inside it, which opens from disk without a server."""
    target = out or file.with_suffix(".html")
    write_viewer(file, target)
    if as_json:
        print(json.dumps({"html": str(target)}))
    else:
        console.print(Text.assemble("wrote ", shown_path(target)))
    if open_page:
        import webbrowser

        webbrowser.open(target.resolve().as_uri())


def register(app: typer.Typer) -> None:
    app.command("view")(view)
