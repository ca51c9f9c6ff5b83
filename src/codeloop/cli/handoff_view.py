"""How `apply ID --branch NAME [--commit]` reports: the commit it wrote or would write."""

from __future__ import annotations

from dataclasses import asdict
from typing import TYPE_CHECKING

from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from codeloop.cli.safe_text import print_json, shown, shown_path, terminal_console

if TYPE_CHECKING:
    from codeloop.workspace.base import LayeredWorkspace

console = terminal_console()


def show_handoff(session_id: str, ws: LayeredWorkspace, branch: str, commit: bool,
                 per_step: bool, as_json: bool) -> None:
    from codeloop.handoff.branch import BranchRefused
    from codeloop.handoff.flow import branch_handoff
    from codeloop.session.entry import open_store
    try:
        done = branch_handoff(open_store(), session_id, ws, branch, commit, per_step)
    except BranchRefused as exc:
        if as_json:
            print_json({"error": exc.message, "problems": exc.problems})
        elif exc.problems:
            table = Table("file", "why it stops the commit")
            for rel, reason in exc.problems.items():
                table.add_row(shown_path(rel), shown(reason))
            console.print(table)
        raise
    if as_json:
        print_json(asdict(done))
        return
    verb = "created" if done.commit else "would create"
    console.print(Text.assemble(f"{verb} branch ", shown_path(branch), f" from {done.base[:12]}"
                                f" with {len(done.files)} file(s) in {len(done.commits)} "
                                "commit(s); your tree, index and current branch are unchanged"))
    if per_step and len(done.commits) == 1:
        console.print("one commit: the plan does not split these changes into steps")
    if done.ignored:
        console.print(Text.assemble(f"left out {len(done.ignored)} new file(s) git ignores: ",
                                    Text(", ").join(shown_path(r) for r in done.ignored[:10])))
    source = "small model" if done.message_source == "model" else "by rule"
    for planned in done.commits:
        title = f"commit {planned.commit[:12]}" if planned.commit else \
            (f"message ({source})" if len(done.commits) == 1 else "commit")
        console.print(Panel(shown(planned.message.rstrip()), title=title, expand=False))
    if not done.commit:
        flags = " --per-step" if per_step else ""
        console.print(f"`codeloop apply {session_id} --branch {branch}{flags} --commit` "
                      "writes it")
