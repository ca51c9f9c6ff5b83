"""`codeloop diff|apply|undo|discard ID`: review a session's changes and bring them home."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table
from rich.text import Text

from codeloop.cli.safe_text import shown, shown_path, terminal_console
from codeloop.errors import SessionNotFound

if TYPE_CHECKING:
    from codeloop.workspace.base import LayeredWorkspace

console = terminal_console()

JsonFlag = Annotated[bool, typer.Option("--json", help="Print the result as JSON.")]


def open_session_workspace(session_id: str) -> LayeredWorkspace:
    """The session's workspace over its repository; SessionNotFound/WorkspaceError if none."""
    from codeloop.session.stores import database_url, open_event_store
    from codeloop.workspace.errors import WorkspaceError
    from codeloop.workspace.factory import open_workspace
    from codeloop.workspace.locate import event_store_path, session_workspace_dir
    store_path = event_store_path()
    if database_url() is None and not store_path.is_file():
        raise SessionNotFound(f"no sessions yet (no event store at {store_path})",
                              "start one with `codeloop run`, or set CODELOOP_DATA_DIR")
    store = open_event_store()
    try:
        row = store.get(session_id)
    finally:
        store.close()
    session_id, repo = row.id, row.repo
    state = session_workspace_dir(session_id)
    if not repo:
        raise SessionNotFound(f"session {session_id} has no repository recorded")
    if not (state / "manifest.json").is_file():
        raise SessionNotFound(f"session {session_id} has no workspace at {state}",
                              "the session has not changed any file yet")
    if not Path(repo).is_dir():
        raise WorkspaceError(f"the repository of session {session_id} is gone ({repo})",
                             f"`codeloop show {session_id}` shows its edits from the log")
    return open_workspace(Path(repo), state)


def diff_cmd(session_id: Annotated[str, typer.Argument(help="The session to review.")],
             as_json: JsonFlag = False) -> None:
    """Show the session's changes against your repository as a git-style diff."""
    from codeloop.cli.render import diff_view
    ws = open_session_workspace(session_id)
    changes = ws.changes()
    if as_json:
        typer.echo(json.dumps([asdict(c) for c in changes], indent=2))
        return
    if not changes:
        console.print(f"session {session_id} changed nothing ({ws.kind} workspace)")
        return
    console.print(diff_view("".join(c.diff for c in changes)))
    console.print(Text.assemble((str(len(changes)), "bold"),
                                f" file(s) changed ({ws.kind} workspace); "
                                f"`codeloop apply {session_id}` writes them into ", shown_path(ws.root)))


def apply_cmd(session_id: Annotated[str, typer.Argument(help="The session to apply.")],
              branch: Annotated[str | None, typer.Option(
                  metavar="NAME", help="Put the changes on a new branch NAME as one commit "
                  "instead, leaving your tree, index and current branch alone (shows the "
                  "commit; add --commit to write it).")] = None,
              commit: Annotated[bool, typer.Option(
                  "--commit", help="With --branch: write the commit and create the branch.")
              ] = False,
              per_step: Annotated[bool, typer.Option(
                  "--per-step", help="With --branch: one commit per plan step that changed "
                  "files (files no edit explains come last).")] = False,
              as_json: JsonFlag = False) -> None:
    """Write the session's changes into your repository (after a checkpoint `undo` restores),
    or with --branch onto a new branch."""
    from codeloop.cli.handoff_view import show_handoff
    from codeloop.workspace.errors import WorkspaceError
    if (commit or per_step) and branch is None:
        raise WorkspaceError("--commit and --per-step need --branch NAME",
                             f"`codeloop apply {session_id} --branch NAME --commit`")
    ws = open_session_workspace(session_id)
    if branch is not None:
        show_handoff(session_id, ws, branch, commit, per_step, as_json)
        return
    result = ws.apply()
    if as_json:
        typer.echo(json.dumps(asdict(result), indent=2))
    if result.conflicts or result.refused:
        if not as_json:
            table = Table("file", "why it stops apply")
            for rel in result.conflicts:
                table.add_row(shown_path(rel), "you changed it since the session began")
            for rel, reason in result.refused.items():
                table.add_row(shown_path(rel), shown(reason))
            console.print(table)
        raise WorkspaceError(
            "nothing was applied",
            "resolve the files above (or `codeloop discard` the session) and apply again",
        )
    if as_json:
        return
    if not result.applied:
        console.print("nothing to apply")
        return
    table = Table()
    table.add_column(Text("applied to ") + shown_path(ws.root))
    for rel in result.applied:
        table.add_row(shown_path(rel))
    console.print(table)
    console.print(f"checkpoint [bold]{result.checkpoint}[/]; `codeloop undo {session_id}` "
                  "restores your files")


def undo_cmd(session_id: Annotated[str, typer.Argument(help="The session to undo.")],
             checkpoint: Annotated[str | None, typer.Option(
                 help="Checkpoint to restore (default: the latest apply).")] = None,
             as_json: JsonFlag = False) -> None:
    """Restore your files as they were before the session's last `apply`."""
    restored = open_session_workspace(session_id).undo(checkpoint)
    if as_json:
        typer.echo(json.dumps({"restored": restored}))
        return
    console.print(Text(f"restored {len(restored)} file(s): ")
                  + Text(", ").join(shown_path(rel) for rel in restored))


def discard_cmd(session_id: Annotated[str, typer.Argument(help="The session to discard.")]
                ) -> None:
    """Drop the session's changes; your repository is not touched."""
    from codeloop.session.cleanup import drop_view_index
    ws = open_session_workspace(session_id)
    count = len(ws.changed_files())
    drop_view_index(ws)
    ws.discard()
    console.print(f"discarded {count} changed file(s) of session {session_id}")


def register(app: typer.Typer) -> None:
    app.command("diff")(diff_cmd)
    app.command("apply")(apply_cmd)
    app.command("undo")(undo_cmd)
    app.command("discard")(discard_cmd)
