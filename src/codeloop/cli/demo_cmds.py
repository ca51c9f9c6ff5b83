"""`codeloop demo`: a whole session offline, with a scripted model, on a bundled repository."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from codeloop.cli.safe_text import shown_path, terminal_console
from codeloop.errors import CodeloopError

console = terminal_console()


def register(app: typer.Typer) -> None:
    @app.command()
    def demo(
        json_out: Annotated[bool, typer.Option("--json", help="Print events as JSON lines.")] = False,
        keep: Annotated[Path | None, typer.Option(help="Create the demo repository here (default: in the data directory).")] = None,
    ) -> None:
        """Run a complete session offline: a failing test, a bug, a fix — no API key needed."""
        from codeloop.cli.live import EXIT_BY_STATUS, drive
        from codeloop.config import data_dir, load_settings
        from codeloop.demo import DEMO_TASK, make_demo_repo, script_path
        from codeloop.llm.router import RoleModels
        from codeloop.llm.scripted import ScriptedModel
        from codeloop.mcp.settings import McpSettings
        from codeloop.session.entry import open_store
        from codeloop.session.setup import new_session_id, start_session
        if keep is not None and keep.exists():
            raise CodeloopError(f"{keep} already exists", "give --keep a directory to create")
        if not json_out:
            console.print("[bold yellow]This is a demo: the model is SCRIPTED[/] (its answers are "
                          "fixed in advance). The loop, tools, sandbox, event log and diff are real.")
        store = open_store()  # first: it makes the data directory, private
        sid = new_session_id()
        # The repository outlives the command: `diff`, `apply` and `undo` need it afterwards.
        repo = make_demo_repo(keep or data_dir() / "demo" / sid).resolve()
        settings = load_settings(repo, {"model": f"scripted:{script_path()}"})
        # Offline and the same for everyone: the user's MCP servers are not started.
        settings = settings.model_copy(update={"mcp": McpSettings()})
        model = ScriptedModel.from_file(script_path())
        start_session(store, DEMO_TASK, repo, settings, model.name, session_id=sid)
        state = drive(store, sid, repo, settings, RoleModels.single(model), json_out)
        if not json_out:
            console.print(Text.assemble("the demo repository stays at ", shown_path(repo),
                                        "; look around with"), soft_wrap=True)
            for command, what in (("show", "the timeline again"), ("diff", "the change"),
                                  ("apply", "write it into the demo repository"),
                                  ("undo", "take it back"),
                                  ("export", "the whole trajectory as JSON")):
                line = f"codeloop {command} {sid}" + (" -o demo.json" if command == "export" else "")
                # "# ..." so that the whole line can be pasted into a shell as it is
                console.print(f"  [bold]{line:<44}[/] [dim]# {what}[/]", soft_wrap=True)
        raise typer.Exit(EXIT_BY_STATUS.get(state.status, 1))
