"""Running a session in the terminal: live output, signals, and what to do next."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console

from codeloop.cli.render import JsonRenderer, LiveRenderer, diff_view
from codeloop.cli.safe_text import terminal_console
from codeloop.events import SessionPaused, StoredEvent
from codeloop.session.control import Control
from codeloop.session.state import SessionState, fold

if TYPE_CHECKING:
    from codeloop.config import Settings
    from codeloop.llm.router import RoleModels
    from codeloop.session.store import EventStore

console = terminal_console()

EXIT_BY_STATUS = {"finished": 0, "budget_exceeded": 3, "stuck": 4, "needs_human": 5,
                  "stopped": 6, "paused": 6, "waiting_approval": 6, "error": 1,
                  "context_overflow": 1, "cancelled": 6}


def renderer_for(json_out: bool) -> JsonRenderer | LiveRenderer:
    return JsonRenderer() if json_out else LiveRenderer(console)


@contextmanager
def _sigterm_as_stop(control: Control) -> Iterator[None]:
    """SIGTERM asks the loop to stop cleanly between steps (Ctrl-C pauses it)."""
    previous = signal.signal(signal.SIGTERM, lambda *_: control.stop.set())
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _after_interrupt(store: EventStore, session_id: str,
                     renderer: JsonRenderer | LiveRenderer) -> SessionState:
    """The state after Ctrl-C; paused in the log even if the loop was cut before it could
    record that (while it was still reading the log, say)."""
    state = fold(store.read(session_id))
    if not state.is_over and state.status != "paused":
        seq = store.append(session_id, [SessionPaused(reason="interrupted by the user (Ctrl-C)")])
        for stored in store.read(session_id, seq - 1):
            renderer.on_event(stored)
        state = fold(store.read(session_id))
    return state


def drive(store: EventStore, session_id: str, repo: Path, settings: Settings,
          models: RoleModels, json_out: bool, shown_after: int | None = 0) -> SessionState:
    """Run (or continue) a session with live output (the logged events after `shown_after`
    first; None: none), its calls routed to `models`; prints the final diff and the next
    step for people."""
    from codeloop.cli.approve import terminal_approver
    from codeloop.cli.interrupt import ctrl_c_pauses
    from codeloop.llm.roles import make_router
    from codeloop.session.cleanup import end_run
    from codeloop.session.setup import RuntimeParts, build_runner
    renderer = renderer_for(json_out)
    if shown_after is not None:
        for stored in store.read(session_id, shown_after):
            renderer.on_event(stored)
    control = Control()
    approver = None if json_out else terminal_approver(console)
    runner = build_runner(store, session_id, repo, settings, models.primary("coder"),
                          parts=RuntimeParts(control=control, approver=approver),
                          on_event=renderer.on_event, on_delta=renderer.on_delta,
                          router=make_router(settings, models))
    if approver is not None:
        approver.context = runner.ctx
    with _sigterm_as_stop(control), ctrl_c_pauses(session_id, control) as ctrl_c:
        try:
            try:
                state = runner.run()
            except KeyboardInterrupt:
                state = _after_interrupt(store, session_id, renderer)
            ctrl_c.loop_done_exit = EXIT_BY_STATUS.get(state.status, 1)
        finally:
            end_run(runner.ctx)
        diff = "" if json_out else runner.ctx.workspace.diff()
        next_steps(terminal_console(stderr=True) if json_out else console, session_id, state,
                   diff)
    return state


def next_steps(out: Console, session_id: str, state: SessionState, diff: str) -> None:
    """The final diff, the figures, and the command that comes next."""
    from codeloop.session.runner import MODEL_SILENT
    if diff:
        out.rule("final diff")
        out.print(diff_view(diff))
    out.print(f"[dim]session {session_id} · {state.steps} steps · ${state.cost_usd:.4f} · "
              f"status {state.status}[/]")
    resume = f"[bold]codeloop resume {session_id}[/]"
    if state.status == "waiting_approval":
        out.print(f"waiting for approval: answer with {resume} in a terminal")
    elif state.status == "paused" and state.pause_reason.startswith(MODEL_SILENT):
        out.print(f"paused: {resume} continues it; add [bold]--base-url URL[/] or "
                  "[bold]--model PROVIDER:MODEL[/] to continue against another endpoint")
    elif state.status == "paused":
        out.print(f"paused: {resume} continues the session")
    elif diff and state.status == "finished":
        out.print(f"review with [bold]codeloop diff {session_id}[/], apply with "
                  f"[bold]codeloop apply {session_id}[/]")


def render_stored(events: list[StoredEvent], json_out: bool) -> None:
    """A session's logged events, as `run` showed them live."""
    renderer = renderer_for(json_out)
    for stored in events:
        renderer.on_event(stored)
