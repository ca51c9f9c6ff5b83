"""`codeloop demo`: a whole session offline, with a scripted model, on a bundled repository."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Annotated

import typer

from codeloop.cli.safe_text import terminal_console
from codeloop.cli.session_cmds import EXIT_BY_STATUS, drive
from codeloop.config import load_settings
from codeloop.demo import DEMO_TASK, make_demo_repo, script_path
from codeloop.llm.scripted import ScriptedModel
from codeloop.session.setup import open_store, start_session

console = terminal_console()


def register(app: typer.Typer) -> None:
    @app.command()
    def demo(
        json_out: Annotated[bool, typer.Option("--json", help="Print events as JSON lines.")] = False,
        keep: Annotated[Path | None, typer.Option(help="Create the demo repository here and keep it.")] = None,
    ) -> None:
        """Run a complete session offline: a failing test, a bug, a fix — no API key needed."""
        if not json_out:
            console.print("[bold yellow]This is a demo: the model is SCRIPTED[/] (its answers are "
                          "fixed in advance). The loop, tools, sandbox, event log and diff are real.")
        with tempfile.TemporaryDirectory(prefix="codeloop-demo-") as tmp:
            repo = make_demo_repo(keep or Path(tmp) / "stats")
            settings = load_settings(repo, {"model": f"scripted:{script_path()}"})
            model = ScriptedModel.from_file(script_path())
            store = open_store()
            sid = start_session(store, DEMO_TASK, repo, settings, model.name)
            state = drive(store, sid, repo, settings, model, json_out)
        raise typer.Exit(EXIT_BY_STATUS.get(state.status, 1))
