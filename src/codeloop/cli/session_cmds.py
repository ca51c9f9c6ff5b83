"""`run`, `resume`, `sessions`, `show`, `export`, `replay`: a session's life from the terminal."""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from codeloop.cli.approve import terminal_approver
from codeloop.cli.options import HERE, Repo, repo_option
from codeloop.cli.render import STATUS_STYLE, JsonRenderer, LiveRenderer, diff_view
from codeloop.cli.safe_text import print_json, shown, shown_path, terminal_console
from codeloop.cli.trust_cmds import notice_untrusted
from codeloop.config import Settings, load_settings
from codeloop.errors import CodeloopError
from codeloop.llm.factory import make_model
from codeloop.llm.scripted import ScriptedModel, replay_turns
from codeloop.llm.types import Model
from codeloop.session.cleanup import end_run
from codeloop.session.export import trajectory
from codeloop.session.runner import Control
from codeloop.session.setup import (
    RuntimeParts,
    build_runner,
    check_repo,
    open_store,
    session_dir,
    start_session,
)
from codeloop.session.state import SessionState, fold
from codeloop.session.store import SQLiteEventStore
from codeloop.workspace.factory import open_workspace

console = terminal_console()


def _status(text: str, quiet: bool) -> AbstractContextManager[object]:
    """A spinner on standard error for people; nothing when the output is JSON."""
    return nullcontext() if quiet else terminal_console(stderr=True).status(text)

EXIT_BY_STATUS = {"finished": 0, "budget_exceeded": 3, "stuck": 4, "needs_human": 5,
                  "stopped": 6, "paused": 6, "waiting_approval": 6, "error": 1,
                  "context_overflow": 1, "cancelled": 6}


def _renderer(json_out: bool) -> JsonRenderer | LiveRenderer:
    return JsonRenderer() if json_out else LiveRenderer(console)


@contextmanager
def _sigterm_as_stop(control: Control) -> Iterator[None]:
    """SIGTERM asks the loop to stop cleanly between steps (Ctrl-C pauses it)."""
    previous = signal.signal(signal.SIGTERM, lambda *_: control.stop.set())
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def session_diff(store: SQLiteEventStore, session_id: str) -> str:
    row = store.get(session_id)
    state = session_dir(row.id) / "workspace"
    if not state.exists():
        return ""
    return open_workspace(Path(row.repo), state).diff()


def drive(store: SQLiteEventStore, session_id: str, repo: Path, settings: Settings, model: Model,
          json_out: bool, new: bool = True) -> SessionState:
    """Run (or continue) a session with live output; prints the final diff for people."""
    renderer = _renderer(json_out)
    if new:
        for stored in store.read(session_id):
            renderer.on_event(stored)
    control = Control()
    approver = None if json_out else terminal_approver(console)
    summariser = make_model(settings.small_model, settings) if settings.small_model else None
    runner = build_runner(store, session_id, repo, settings, model, summariser=summariser,
                          parts=RuntimeParts(control=control, approver=approver),
                          on_event=renderer.on_event, on_delta=renderer.on_delta)
    if approver is not None:
        approver.context = runner.ctx
    try:
        with _sigterm_as_stop(control):
            state = runner.run()
    finally:
        end_run(runner.ctx)
    if not json_out:
        diff = runner.ctx.workspace.diff()
        if diff:
            console.rule("final diff")
            console.print(diff_view(diff))
        console.print(f"[dim]session {session_id} · {state.steps} steps · "
                      f"${state.cost_usd:.4f} · status {state.status}[/]")
        if state.status == "waiting_approval":
            console.print(f"waiting for approval: answer with [bold]codeloop resume {session_id}[/]"
                          " in a terminal")
        if diff and state.status == "finished":
            console.print(f"review with [bold]codeloop diff {session_id}[/], apply with "
                          f"[bold]codeloop apply {session_id}[/]")
    return state


def register(app: typer.Typer) -> None:
    @app.command()
    def run(
        task: Annotated[str, typer.Argument(help="What to do, in plain words.")],
        repo: Repo = HERE,
        model: Annotated[str | None, typer.Option(metavar="PROVIDER:MODEL", help="The model, e.g. openai:gpt-4.1.")] = None,
        base_url: Annotated[str | None, typer.Option(help="OpenAI-compatible endpoint URL.")] = None,
        max_steps: Annotated[int | None, typer.Option(help="Stop after this many model calls.")] = None,
        max_cost: Annotated[float | None, typer.Option(help="Stop past this many dollars.")] = None,
        max_tokens: Annotated[int | None, typer.Option(help="Stop past this many tokens.")] = None,
        timeout: Annotated[float | None, typer.Option(help="Wall-clock limit in seconds.")] = None,
        approval_mode: Annotated[str | None, typer.Option(help="When to ask you: ask, auto-edit or full-auto.")] = None,
        plan_approval: Annotated[bool | None, typer.Option("--plan-approval/--no-plan-approval", help="Ask before adopting the model's plan (default: only in approval mode ask).")] = None,
        no_sandbox: Annotated[bool, typer.Option("--no-sandbox", help="Run commands without isolation (every command is asked).")] = False,
        json_out: Annotated[bool, typer.Option("--json", help="Print events as JSON lines.")] = False,
    ) -> None:
        """Work a task on a repository and hand back a diff for review."""
        repo = check_repo(repo)
        budgets: dict[str, Any] = {k: v for k, v in {
            "max_steps": max_steps, "max_cost_usd": max_cost, "max_tokens": max_tokens,
            "wall_clock_s": timeout}.items() if v is not None}
        flags: dict[str, Any] = {"model": model, "base_url": base_url,
                                 "approval_mode": approval_mode, "plan_approval": plan_approval}
        if budgets:
            flags["budgets"] = budgets
        if no_sandbox:
            flags["sandbox"] = False
        settings = load_settings(repo, flags)
        notice_untrusted(repo, terminal_console(stderr=True))
        llm = make_model(settings.model, settings)
        store = open_store()
        with _status("reading the repository (the first run on a large one builds its index)",
                     json_out):
            sid = start_session(store, task, repo, settings, llm.name)
        state = drive(store, sid, repo.resolve(), settings, llm, json_out)
        raise typer.Exit(EXIT_BY_STATUS.get(state.status, 1))

    @app.command()
    def resume(
        session_id: Annotated[str, typer.Argument(help="The session to continue.")],
        model: Annotated[str | None, typer.Option(help="Override the recorded model.")] = None,
        json_out: Annotated[bool, typer.Option("--json", help="Print events as JSON lines.")] = False,
    ) -> None:
        """Continue an interrupted session from its last complete step."""
        store = open_store()
        row = store.get(session_id)
        state = fold(store.read(row.id))
        if state.is_over:
            raise CodeloopError(f"session {row.id} already ended ({state.status})",
                                f"see it with `codeloop show {row.id}`")
        assert state.started is not None
        recorded = Settings.model_validate(state.started.config)
        settings = load_settings(Path(row.repo), {"model": model or recorded.model,
                                                  "budgets": recorded.budgets.model_dump()})
        llm = make_model(model or row.model, settings)
        final = drive(store, row.id, Path(row.repo), settings, llm, json_out, new=False)
        raise typer.Exit(EXIT_BY_STATUS.get(final.status, 1))

    @app.command()
    def sessions(
        status: Annotated[str | None, typer.Option(help="Only sessions with this status.")] = None,
        json_out: Annotated[bool, typer.Option("--json", help="Print the sessions as JSON.")] = False,
    ) -> None:
        """List sessions: status, task, steps, cost."""
        rows = open_store().sessions(status=status)
        if json_out:
            print(json.dumps([r.__dict__ for r in rows], indent=2))
            return
        table = Table(title="sessions")
        for col in ("id", "started", "status", "steps", "cost", "task"):
            table.add_column(col)
        for r in rows:
            style = STATUS_STYLE.get(r.status, "white")
            table.add_row(r.id, datetime.fromtimestamp(r.created).strftime("%Y-%m-%d %H:%M"),
                          shown(r.status, style), str(r.steps), f"${r.cost_usd:.4f}",
                          shown(r.task[:60], one_line=True))
        console.print(table)

    @app.command()
    def show(
        session_id: Annotated[str, typer.Argument(help="The session to show.")],
        json_out: Annotated[bool, typer.Option("--json", help="Print events as JSON lines.")] = False,
    ) -> None:
        """Show a session's timeline and its final diff."""
        store = open_store()
        row = store.get(session_id)
        renderer = _renderer(json_out)
        for stored in store.read(row.id):
            renderer.on_event(stored)
        if not json_out:
            diff = session_diff(store, row.id)
            console.rule("diff")
            console.print(diff_view(diff) if diff else "(no changes)")

    @app.command()
    def export(
        session_id: Annotated[str, typer.Argument(help="The session to export.")],
        out: Annotated[Path | None, typer.Option("--out", "-o", metavar="FILE", help="File to write (default stdout).")] = None,
    ) -> None:
        """Write the full trajectory (requests, responses, tools, tokens, cost, timings) as JSON."""
        store = open_store()
        row = store.get(session_id)
        doc = trajectory(row, store.read(row.id), session_diff(store, row.id))
        if out is None:
            print_json(doc, indent=2)
        else:
            out.write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
            console.print(Text.assemble("wrote ", shown_path(out), f" ({len(doc['events'])} events)"))

    @app.command()
    def replay(
        file: Annotated[Path, typer.Argument(help="A trajectory written by `codeloop export`.")],
        repo: Annotated[Path | None, repo_option("The repository to replay on (default: the recorded one).")] = None,
        json_out: Annotated[bool, typer.Option("--json", help="Print events as JSON lines.")] = False,
    ) -> None:
        """Re-run a recorded session, re-issuing its model outputs."""
        try:
            doc = json.loads(file.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise CodeloopError(f"cannot read trajectory {file}: {exc}",
                                "pass a file written by `codeloop export ID -o FILE`") from exc
        if doc.get("format", "").split("/")[0] != "codeloop-trajectory":
            raise CodeloopError(f"{file} is not a codeloop trajectory")
        target = repo or Path(doc["session"]["repo"])
        task = doc["summary"]["task"]
        settings = load_settings(target, {"model": "replay"})
        llm = ScriptedModel(replay_turns(doc), name=f"replay:{file.name}")
        store = open_store()
        sid = start_session(store, task, target, settings, llm.name)
        state = drive(store, sid, target.resolve(), settings, llm, json_out)
        raise typer.Exit(EXIT_BY_STATUS.get(state.status, 1))
