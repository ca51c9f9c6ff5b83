"""`run`, `resume`, `sessions`, `show`, `export`, `replay`: a session's life from the terminal."""

from __future__ import annotations

import json
from contextlib import AbstractContextManager, nullcontext
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from codeloop.cli.options import HERE, Repo, Roles, repo_option, roles_flag
from codeloop.cli.safe_text import print_json, shown, shown_path, terminal_console
from codeloop.errors import CodeloopError

if TYPE_CHECKING:
    from codeloop.session.store import EventStore

console = terminal_console()


def _status(text: str, quiet: bool) -> AbstractContextManager[object]:
    """A spinner on standard error for people; nothing when the output is JSON."""
    return nullcontext() if quiet else terminal_console(stderr=True).status(text)


def session_diff(store: EventStore, session_id: str) -> tuple[str, str]:
    """The session's diff and where it came from: its workspace over the repository, or the
    log's own edits when the repository is gone (a deleted temporary checkout, say)."""
    from codeloop.session.entry import session_dir
    from codeloop.session.export import logged_diff
    from codeloop.workspace.factory import open_workspace
    row = store.get(session_id)
    state = session_dir(row.id) / "workspace"
    if not state.exists():
        return "", "workspace"
    if not Path(row.repo).is_dir():
        return logged_diff(store.read(row.id)), "log"
    return open_workspace(Path(row.repo), state).diff(), "workspace"


def setting_flags(model: str | None, base_url: str | None, approval_mode: str | None,
                  plan_approval: bool | None, budgets: dict[str, Any]) -> dict[str, Any]:
    """The settings flags `run` and `resume` share, as a settings layer (None: not given)."""
    flags: dict[str, Any] = {"model": model, "base_url": base_url,
                             "approval_mode": approval_mode, "plan_approval": plan_approval}
    given = {k: v for k, v in budgets.items() if v is not None}
    if given:
        flags["budgets"] = given
    return flags


def register(app: typer.Typer) -> None:
    @app.command()
    def run(
        task: Annotated[str, typer.Argument(help="What to do, in plain words.")],
        repo: Repo = HERE,
        model: Annotated[str | None, typer.Option(metavar="PROVIDER:MODEL", help="The model, e.g. openai:gpt-4.1 (a role the config's models table names keeps its own).")] = None,
        base_url: Annotated[str | None, typer.Option(help="OpenAI-compatible endpoint URL.")] = None,
        max_steps: Annotated[int | None, typer.Option(help="Stop after this many model calls.")] = None,
        max_cost: Annotated[float | None, typer.Option(help="Stop past this many dollars.")] = None,
        max_tokens: Annotated[int | None, typer.Option(help="Stop past this many tokens.")] = None,
        timeout: Annotated[float | None, typer.Option(help="Wall-clock limit in seconds.")] = None,
        approval_mode: Annotated[str | None, typer.Option(help="When to ask you: ask, auto-edit or full-auto.")] = None,
        plan_approval: Annotated[bool | None, typer.Option("--plan-approval/--no-plan-approval", help="Ask before adopting the model's plan (default: only in approval mode ask).")] = None,
        no_sandbox: Annotated[bool, typer.Option("--no-sandbox", help="Run commands without isolation (every command is asked).")] = False,
        no_memory: Annotated[bool, typer.Option("--no-memory", help="Recall no long-term memory, offer no remember/recall tools, store nothing.")] = False,
        roles: Roles = None,
        json_out: Annotated[bool, typer.Option("--json", help="Print events as JSON lines.")] = False,
    ) -> None:
        """Work a task on a repository and hand back a diff for review."""
        from codeloop.cli.trust_cmds import notice_untrusted
        from codeloop.config import load_settings
        from codeloop.llm.factory import check_endpoint, pinned_endpoint
        from codeloop.llm.roles import main_choice, make_role_models, settings_for
        from codeloop.session.entry import check_repo, open_store
        repo = check_repo(repo)
        flags = setting_flags(model, base_url, approval_mode, plan_approval, {
            "max_steps": max_steps, "max_cost_usd": max_cost, "max_tokens": max_tokens,
            "wall_clock_s": timeout})
        if no_sandbox:
            flags["sandbox"] = False
        if no_memory:
            flags["memory"] = {"enabled": False}
        settings = load_settings(repo, {**flags, **roles_flag(roles)})
        notice_untrusted(repo, terminal_console(stderr=True))
        main = main_choice(settings)
        settings = pinned_endpoint(main.model, settings)
        models = make_role_models(settings)
        # Before the session exists: a server that is not there leaves nothing behind.
        check_endpoint(main.model, settings_for(main, settings))
        # The session's machinery (index, sandbox, tools) loads once the flags and the model's
        # server are known to be good: a mistake there is reported without waiting for it.
        from codeloop.cli.live import EXIT_BY_STATUS, drive
        from codeloop.session.setup import start_session

        store = open_store()
        with _status("reading the repository (the first run on a large one builds its index)",
                     json_out):
            sid = start_session(store, task, repo, settings, models.primary("coder").name)
        state = drive(store, sid, repo.resolve(), settings, models, json_out)
        raise typer.Exit(EXIT_BY_STATUS.get(state.status, 1))

    @app.command()
    def resume(
        session_id: Annotated[str, typer.Argument(help="The session to continue.")],
        model: Annotated[str | None, typer.Option(metavar="PROVIDER:MODEL", help="The model from now on, instead of the session's own (a role the config's models table names keeps its own).")] = None,
        base_url: Annotated[str | None, typer.Option(help="OpenAI-compatible endpoint URL from now on, instead of the session's own.")] = None,
        max_steps: Annotated[int | None, typer.Option(help="Stop after this many model calls in all.")] = None,
        max_cost: Annotated[float | None, typer.Option(help="Stop past this many dollars in all.")] = None,
        max_tokens: Annotated[int | None, typer.Option(help="Stop past this many tokens in all.")] = None,
        timeout: Annotated[float | None, typer.Option(help="Wall-clock limit in seconds.")] = None,
        approval_mode: Annotated[str | None, typer.Option(help="When to ask you from now on: ask, auto-edit or full-auto.")] = None,
        plan_approval: Annotated[bool | None, typer.Option("--plan-approval/--no-plan-approval", help="Ask before adopting the model's plan.")] = None,
        json_out: Annotated[bool, typer.Option("--json", help="Print events as JSON lines.")] = False,
    ) -> None:
        """Continue a paused or interrupted session from its last complete step, with the
        settings it started with; a flag given here changes that setting from now on."""
        from codeloop.cli.live import EXIT_BY_STATUS, drive
        from codeloop.config import load_settings
        from codeloop.llm.endpoint import EndpointUnreachable
        from codeloop.llm.factory import check_endpoint
        from codeloop.llm.roles import main_choice, make_role_models, settings_for
        from codeloop.session.entry import check_repo, open_store
        from codeloop.session.resume import with_overrides
        from codeloop.session.state import fold
        store = open_store()
        row = store.get(session_id)
        state = fold(store.read(row.id))
        if state.is_over:
            raise CodeloopError(f"session {row.id} already ended ({state.status})",
                                f"see it with `codeloop show {row.id}`")
        repo = check_repo(Path(row.repo))
        flags = setting_flags(model, base_url, approval_mode, plan_approval, {
            "max_steps": max_steps, "max_cost_usd": max_cost, "max_tokens": max_tokens,
            "wall_clock_s": timeout})
        # The key is never in the log: it is the user's, as configured now.
        own = load_settings(repo)
        settings, override = with_overrides(state, flags, own.api_key)
        # MCP servers are not in the log either: the user's, as configured now.
        settings = settings.model_copy(update={"model": settings.model or row.model,
                                               "mcp": own.mcp})
        models = make_role_models(settings)
        main = main_choice(settings)
        try:
            check_endpoint(main.model, settings_for(main, settings))
        except EndpointUnreachable as exc:
            raise EndpointUnreachable(
                exc.message, f"the session is unchanged; start that server, or continue "
                f"against another: `codeloop resume {row.id} --base-url URL`") from exc
        if override is not None:
            store.append(row.id, [override])
        final = drive(store, row.id, repo, settings, models, json_out, shown_after=state.last_seq)
        raise typer.Exit(EXIT_BY_STATUS.get(final.status, 1))

    @app.command()
    def sessions(
        status: Annotated[str | None, typer.Option(help="Only sessions with this status.")] = None,
        json_out: Annotated[bool, typer.Option("--json", help="Print the sessions as JSON.")] = False,
    ) -> None:
        """List sessions: status, task, steps, cost."""
        from codeloop.cli.render import STATUS_STYLE
        from codeloop.session.entry import open_store
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
        from codeloop.cli.live import render_stored
        from codeloop.cli.render import diff_view, plan_table, role_budget_table, usage_table
        from codeloop.session.entry import open_store
        from codeloop.session.role_budgets import role_budget_rows
        from codeloop.session.routing_state import usage_rows
        from codeloop.session.state import fold
        store = open_store()
        row = store.get(session_id)
        events = store.read(row.id)
        render_stored(events, json_out)
        if not json_out:
            state = fold(events)
            rows = usage_rows(state.routing)
            if rows:
                console.print(usage_table(rows))
            if state.plan is not None:
                console.print(plan_table(state.plan.summary, list(state.plan.steps),
                                         title=f"plan (revision {state.plan.revision})"))
            shares = role_budget_rows(state)
            if shares:
                console.print(role_budget_table(shares))
            diff, source = session_diff(store, row.id)
            console.rule("diff" if source == "workspace" else
                         "diff (repository gone; the edits from the log)")
            console.print(diff_view(diff) if diff else "(no changes)")

    @app.command()
    def export(
        session_id: Annotated[str, typer.Argument(help="The session to export.")],
        out: Annotated[Path | None, typer.Option("--out", "-o", metavar="FILE", help="File to write (default stdout).")] = None,
    ) -> None:
        """Write the full trajectory (requests, responses, tools, tokens, cost, timings) as JSON."""
        from codeloop.session.entry import open_store
        from codeloop.session.export import trajectory
        store = open_store()
        row = store.get(session_id)
        doc = trajectory(row, store.read(row.id), *session_diff(store, row.id))
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
        from codeloop.cli.live import EXIT_BY_STATUS, drive
        from codeloop.config import load_settings
        from codeloop.llm.router import RoleModels
        from codeloop.llm.scripted import ScriptedModel, replay_turns
        from codeloop.session.entry import check_repo, open_store
        from codeloop.session.export import read_trajectory
        from codeloop.session.setup import start_session
        doc = read_trajectory(file)
        target = check_repo(repo or Path(doc["session"]["repo"]))
        task = doc["summary"]["task"]
        settings = load_settings(target, {"model": "replay", **_recorded_roles(doc)})
        llm = ScriptedModel(replay_turns(doc), name=f"replay:{file.name}")
        store = open_store()
        sid = start_session(store, task, target, settings, llm.name)
        state = drive(store, sid, target, settings, RoleModels.single(llm), json_out)
        raise typer.Exit(EXIT_BY_STATUS.get(state.status, 1))


def _recorded_roles(doc: dict[str, Any]) -> dict[str, Any]:
    """A session recorded with roles replays with them: its turns went planner, coder and
    reviewer, and the same tools must be there for them."""
    started: dict[str, Any] = next(
        (e for e in doc.get("events", []) if e.get("type") == "session_started"), {})
    roles = started.get("config", {}).get("roles")
    return {"roles": roles} if isinstance(roles, dict) and roles.get("enabled") else {}
