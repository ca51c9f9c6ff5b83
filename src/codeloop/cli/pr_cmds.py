"""`codeloop pr ID`: the pull request's title and body, and opening it with `gh --open`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.text import Text

from codeloop.cli.safe_text import print_json, shown, shown_path, terminal_console
from codeloop.errors import CodeloopError

if TYPE_CHECKING:
    from codeloop.workspace.base import FileChange

err = terminal_console(stderr=True)


def _changes(session_id: str) -> list[FileChange]:
    """The session's changes from its workspace; none when it has none (the PR then lists
    the files of its branch commit)."""
    from codeloop.cli.workspace_cmds import open_session_workspace
    try:
        return open_session_workspace(session_id).changes()
    except CodeloopError:
        return []


def pr_cmd(
    session_id: Annotated[str, typer.Argument(help="The session to describe.")],
    out: Annotated[Path | None, typer.Option("--out", "-o", metavar="FILE", help="File to write (default stdout).")] = None,
    open_pr: Annotated[bool, typer.Option("--open", help="Open the pull request with `gh` from the branch `apply --branch NAME --commit` made (push it first).")] = False,
    github_repo: Annotated[str | None, typer.Option(metavar="OWNER/NAME", help="The GitHub repository for --open (default: the one origin points at).")] = None,
    base: Annotated[str | None, typer.Option(metavar="BRANCH", help="The branch to merge into for --open (default: the repository's default branch).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
) -> None:
    """Write the pull request for a session: task, plan, what changed, how it was verified
    (tests before and after), what it cost."""
    from codeloop.events import PullRequestOpened
    from codeloop.handoff.pr import github_slug, open_pull_request, pull_request
    from codeloop.session.entry import open_store
    from codeloop.session.state import fold
    store = open_store()
    row = store.get(session_id)
    events = [e.event for e in store.read(row.id)]
    pr = pull_request(fold(store.read(row.id)), events, _changes(row.id))
    text = f"{pr.title}\n\n{pr.body}"
    url = ""
    if open_pr:
        slug = github_repo or github_slug(Path(row.repo))
        url = open_pull_request(pr, slug, base)
        store.append(row.id, [PullRequestOpened(branch=pr.branch or "", url=url)])
    if as_json:
        print_json({"title": pr.title, "body": pr.body, "branch": pr.branch, "url": url or None})
    elif out is not None:
        out.write_text(text)
        err.print(Text.assemble("wrote ", shown_path(out)))
    else:
        typer.echo(text, nl=False)
    if url and not as_json:
        err.print(Text.assemble("opened ", shown(url)))


def register(app: typer.Typer) -> None:
    app.command("pr")(pr_cmd)
