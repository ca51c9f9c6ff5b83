"""codeloop as an MCP server: other agents and IDEs start sessions, watch them, read their
diff and answer their approvals. Backed by the HTTP server's own `SessionService`, so a
session runs, pauses for approval and resumes the same way whichever door it came in by."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

from codeloop import __version__
from codeloop.config import Settings
from codeloop.errors import CodeloopError
from codeloop.private_paths import private_dir
from codeloop.server.auth import ADMIN_USER
from codeloop.server.notify import Notifier, live_store
from codeloop.server.service import ModelFactory, SessionService
from codeloop.session.stores import database_url

# The person on this machine who holds the data directory: as on the HTTP server's admin
# token, they see their own sessions and the command line's.
USER = ADMIN_USER
_READ = ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=False)
_ACT = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)


Handler = Callable[..., Awaitable[dict[str, Any]]]


def _told(handler: Handler) -> Handler:
    """Our errors reach the client with their message and hint (the SDK hides any other
    exception's text as a crash)."""
    @functools.wraps(handler)
    async def wrapped(*args: Any, **kwargs: Any) -> dict[str, Any]:
        try:
            return await handler(*args, **kwargs)
        except CodeloopError as exc:
            hint = f" ({exc.hint})" if exc.hint else ""
            raise ToolError(f"{exc.message}{hint}") from exc
    return wrapped


def build_server(data_dir: Path, roots: Sequence[Path], *,
                 model_factory: ModelFactory | None = None,
                 defaults: Settings | None = None) -> MCPServer[Any]:
    """The MCP server over the sessions under `data_dir`, opening repositories only in `roots`."""
    private_dir(data_dir)
    # The store the HTTP server would use (PostgreSQL when configured); nothing here tails it.
    store, _listener = live_store(data_dir, Notifier(), database_url())
    service = SessionService(data_dir, store, roots, model_factory, defaults=defaults)

    @contextlib.asynccontextmanager
    async def lifespan(_: MCPServer[Any]) -> AsyncIterator[None]:
        try:
            yield
        finally:  # running sessions pause at their next step, resumable later
            await service.pool.close()

    server: MCPServer[Any] = MCPServer(
        "codeloop", version=__version__, lifespan=lifespan,
        instructions="Run codeloop coding sessions: start_session, then poll session_status; "
                     "answer pending approvals with approve; read the result with session_diff.")

    @server.tool(annotations=_ACT)
    @_told
    async def start_session(task: str, repo: str, model: str | None = None,
                            approval_mode: str | None = None,
                            max_steps: int | None = None) -> dict[str, Any]:
        """Start a coding session on a repository (a directory this server may open); it runs
        in the background. `model` is PROVIDER:MODEL (default: the configured one);
        `approval_mode` is ask, auto-edit or full-auto."""
        budgets = {"max_steps": max_steps} if max_steps is not None else {}
        sid = await anyio.to_thread.run_sync(
            lambda: service.create(USER, task, Path(repo), model, budgets, approval_mode))
        service.pool.submit(sid, USER)
        return {"session_id": sid, "status": "queued"}

    @server.tool(annotations=_READ)
    @_told
    async def session_status(session_id: str) -> dict[str, Any]:
        """A session's status, steps, cost, final summary, and the calls waiting for approval."""
        view = await anyio.to_thread.run_sync(service.view, session_id, USER)
        state = view.state
        return {"session_id": view.row.id, "task": view.row.task, "status": state.status,
                "active": service.pool.is_active(view.row.id), "steps": state.steps,
                "cost_usd": round(state.cost_usd, 6),
                "summary": state.finished.summary if state.finished else "",
                "reason": state.finished.reason if state.finished else state.pause_reason,
                "pending_approvals": [
                    {k: p[k] for k in ("call_id", "name", "summary", "kind", "arguments")}
                    for p in service.pending(state)]}

    @server.tool(annotations=_READ)
    @_told
    async def session_diff(session_id: str) -> dict[str, Any]:
        """The files a session changed and its unified diff (not applied to the repository)."""
        files, diff = await anyio.to_thread.run_sync(service.diff, session_id, USER)
        return {"files": files, "diff": diff}

    @server.tool(annotations=_ACT)
    @_told
    async def approve(session_id: str, call_id: str, approved: bool = True, reason: str = "",
                      remember: bool = False) -> dict[str, Any]:
        """Answer a pending approval (see session_status): approve or deny the call; the
        session then continues. `remember` allows calls like it for the rest of the session."""
        # In the event loop: answering queues the session, and the pool lives on this loop.
        service.decide(session_id, USER, call_id, approved, reason, remember)
        return {"session_id": session_id, "call_id": call_id, "approved": approved}

    return server
