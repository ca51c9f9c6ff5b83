"""The HTTP + WebSocket API and the web page, as a FastAPI app."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Annotated, Any

from fastapi import FastAPI, Query, Request, WebSocket, WebSocketDisconnect
from fastapi import status as http_status
from fastapi.responses import FileResponse, JSONResponse
from fastapi.staticfiles import StaticFiles

from codeloop.config import Settings
from codeloop.errors import CodeloopError, SessionNotFound
from codeloop.events import StoredEvent
from codeloop.memory.records import MemoryNotFound
from codeloop.private_paths import private_dir
from codeloop.server.access import Refused
from codeloop.server.admin import Admin
from codeloop.server.admin_api import add_admin_routes
from codeloop.server.auth import TokenStore
from codeloop.server.deps import Unauthorized, User, current_user
from codeloop.server.guard import Guard
from codeloop.server.memory_api import memory_router
from codeloop.server.notify import Notifier, live_store
from codeloop.server.ops import add_ops_routes
from codeloop.server.ratelimit import RateLimiter, SharedRateLimiter
from codeloop.server.roots import RepoNotAllowed
from codeloop.server.schemas import (
    ApplyOut,
    ApprovalIn,
    BudgetUse,
    CreateSession,
    DiffOut,
    EventOut,
    Message,
    ModelUsageOut,
    PendingApproval,
    PlanOut,
    RejectIn,
    RoleBudgetOut,
    SessionDetail,
    SessionOut,
)
from codeloop.server.service import (
    Conflict,
    ModelFactory,
    SessionService,
    plan_dict,
)
from codeloop.server.tenants import TenantStore
from codeloop.session.export import logged_diff, trajectory
from codeloop.session.resume import remembered_rules, session_settings
from codeloop.session.role_budgets import role_budget_rows
from codeloop.session.routing_state import usage_rows
from codeloop.session.state import SessionState
from codeloop.session.store import EventStore, SessionRow
from codeloop.session.stores import database_url as env_database_url
from codeloop.telemetry.metrics import Metrics

STATIC = Path(__file__).parent / "static"
_VIEWER_CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
               "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'")
_ERRORS: dict[int | str, dict[str, Any]] = {
    401: {"model": Message, "description": "Missing or unknown token"},
    403: {"model": Message, "description": "The repository is outside the allowed roots"},
    404: {"model": Message, "description": "No such session (or not yours)"},
    409: {"model": Message, "description": "Not possible in the session's current state"},
    429: {"model": Message, "description": "Over a tenant's rate or usage limit (see Retry-After)"},
}


def event_out(stored: StoredEvent) -> dict[str, Any]:
    event = stored.event
    return {"seq": stored.seq, "type": str(event.type), "ts": event.ts,
            "event": event.model_dump(mode="json")}


def _session_out(service: SessionService, row: SessionRow) -> SessionOut:
    return SessionOut(
        id=row.id, created=row.created, updated=row.updated, task=row.task, repo=row.repo,
        model=row.model, status=row.status, queued=service.pool.is_queued(row.id),
        active=service.pool.is_active(row.id), steps=row.steps, cost_usd=row.cost_usd,
        last_seq=row.last_seq,
    )


def _detail(service: SessionService, row: SessionRow, state: SessionState) -> SessionDetail:
    budgets = session_settings(state).budgets if state.started else Settings().budgets
    return SessionDetail(
        **_session_out(service, row).model_dump(),
        summary=state.finished.summary if state.finished else "",
        finish_reason=state.finished.reason if state.finished else "",
        input_tokens=state.input_tokens, output_tokens=state.output_tokens,
        tool_calls=len(state.actions), edits=len(state.edits),
        budgets=BudgetUse(steps=state.steps, max_steps=budgets.max_steps,
                          tokens=state.total_tokens, max_tokens=budgets.max_tokens,
                          cost_usd=state.cost_usd, max_cost_usd=budgets.max_cost_usd),
        pending_approvals=[PendingApproval(**p) for p in service.pending(state)],
        remembered_rules=remembered_rules(state),
        plan=None if state.plan is None else PlanOut(**plan_dict(state.plan)),
        by_model=[ModelUsageOut.model_validate(r) for r in usage_rows(state.routing)],
        role_budgets=[RoleBudgetOut.model_validate(r) for r in role_budget_rows(state)],
    )


def create_app(data_dir: Path, *, allowed_roots: Sequence[Path] | None = None,
               model_factory: ModelFactory | None = None, per_user: int = 2,
               max_workers: int = 16, defaults: Settings | None = None, poll_s: float = 0.5,
               resume_on_start: bool = True, database_url: str | None = None) -> FastAPI:
    """The server for the sessions under `data_dir`, opening repositories only inside
    `allowed_roots` (default: the current directory); resumes running sessions on start
    (`resume_on_start=False` makes a server that only reads, e.g. a second one on the data).
    Events go to PostgreSQL at `database_url` (default: CODELOOP_DATABASE_URL) if set."""
    private_dir(data_dir)
    url = database_url or env_database_url()
    # Tenants, tokens and request rates live where the events do: on PostgreSQL, every
    # server process on the database shares them.
    tenants = TenantStore(data_dir, url)
    tokens = TokenStore(data_dir, tenants.db)
    notifier = Notifier()
    store, listener = live_store(data_dir, notifier, url)
    metrics = Metrics(store)
    store.subscribe(metrics)
    roots = list(allowed_roots) if allowed_roots is not None else [Path.cwd()]
    admin = Admin(tenants, tokens)
    admin.migrate()  # tokens made before tenants: members of the default tenant
    guard = Guard(admin.tenants, store)
    service = SessionService(data_dir, store, roots, model_factory, per_user=per_user,
                             max_workers=max_workers, defaults=defaults, guard=guard)

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        notifier.bind(asyncio.get_running_loop())
        if listener is not None:
            listener.start()
        if resume_on_start:
            service.recover()
        yield
        await service.pool.close()
        if listener is not None:
            listener.stop()
        store.close()
        tenants.close()

    app = FastAPI(title="codeloop", version="1", lifespan=lifespan,
                  description="Run, watch, approve and review codeloop sessions.")
    app.state.service = service
    app.state.tokens = tokens
    app.state.metrics = metrics
    app.state.limiter = SharedRateLimiter(tenants.db) if tenants.db.shared else RateLimiter()

    @app.exception_handler(CodeloopError)
    async def _codeloop_error(_: Request, exc: CodeloopError) -> JSONResponse:
        if isinstance(exc, Refused):
            detail = exc.message + (f" ({exc.hint})" if exc.hint else "")
            headers = {"Retry-After": str(exc.retry_after)} if exc.retry_after else None
            return JSONResponse({"detail": detail}, status_code=exc.http_status,
                                headers=headers)
        code = (404 if isinstance(exc, SessionNotFound | MemoryNotFound)
                else 409 if isinstance(exc, Conflict)
                else 403 if isinstance(exc, RepoNotAllowed) else 400)
        detail = exc.message + (f" ({exc.hint})" if exc.hint else "")
        return JSONResponse({"detail": detail}, status_code=code)

    @app.exception_handler(Unauthorized)
    async def _unauthorized(_: Request, __: Unauthorized) -> JSONResponse:
        return JSONResponse({"detail": "missing or unknown bearer token"}, status_code=401,
                            headers={"WWW-Authenticate": "Bearer"})

    @app.get("/", include_in_schema=False)
    async def page() -> FileResponse:
        return FileResponse(STATIC / "index.html")

    @app.get("/view", include_in_schema=False)
    async def viewer() -> FileResponse:
        # Only the page's own scripts run and it talks only to this server, whatever a
        # trajectory opened in it contains.
        return FileResponse(STATIC / "viewer.html", headers={"Content-Security-Policy": _VIEWER_CSP})

    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    add_ops_routes(app, store, metrics, current_user)

    @app.get("/whoami", responses=_ERRORS, tags=["auth"])
    async def whoami(user: User) -> dict[str, str]:
        """The user the token belongs to, their tenant and role (`operator`: the server's)."""
        who = guard.access.principal(user)
        return {"user": user, "tenant": who.tenant or "", "role": who.role}

    @app.post("/sessions", status_code=http_status.HTTP_201_CREATED, responses=_ERRORS,
              tags=["sessions"])
    async def create_session(body: CreateSession, user: User) -> SessionOut:
        """Create a session and queue it to run."""
        budgets = body.budgets.model_dump(exclude_none=True)
        sid = await asyncio.to_thread(service.create, user, body.task, Path(body.repo),
                                      body.model, budgets, body.approval_mode,
                                      body.plan_approval)
        service.pool.submit(sid, user)
        return _session_out(service, store.get(sid))

    @app.get("/sessions", responses=_ERRORS, tags=["sessions"])
    async def list_sessions(user: User, status: str | None = None) -> list[SessionOut]:
        """Your sessions (for the admin also the command line's), newest first, optionally
        only those with a status."""
        return [_session_out(service, r)
                for r in store.sessions(owner=guard.visible_owners(user), status=status)]

    @app.get("/sessions/{session_id}", responses=_ERRORS, tags=["sessions"])
    async def get_session(session_id: str, user: User) -> SessionDetail:
        """One session: its listing and what the fold of its log says."""
        view = service.view(session_id, user)
        return _detail(service, view.row, view.state)

    @app.post("/sessions/{session_id}/cancel", responses=_ERRORS, tags=["sessions"])
    def cancel(session_id: str, user: User) -> SessionOut:  # may wait on a Ray worker
        """End the session (a running one stops at its next step)."""
        service.cancel(session_id, user)
        return _session_out(service, service.owned(session_id, user))

    @app.post("/sessions/{session_id}/pause", responses=_ERRORS, tags=["sessions"])
    def pause(session_id: str, user: User) -> SessionOut:  # may wait on a Ray worker
        """Pause the session at its next step; resume continues it."""
        service.pause(session_id, user)
        return _session_out(service, service.owned(session_id, user))

    @app.post("/sessions/{session_id}/resume", responses=_ERRORS, tags=["sessions"])
    async def resume(session_id: str, user: User) -> SessionOut:
        """Queue a paused session to run again."""
        service.resume(session_id, user)
        return _session_out(service, service.owned(session_id, user))

    @app.get("/sessions/{session_id}/events", responses=_ERRORS, tags=["events"])
    async def events(session_id: str, user: User,
                     after: Annotated[int, Query(ge=0)] = 0) -> list[EventOut]:
        """The session's events with a sequence number above `after`, in order."""
        row = service.owned(session_id, user)
        return [EventOut(**event_out(e)) for e in service.events(row.id, after)]

    @app.websocket("/sessions/{session_id}/stream")
    async def stream(websocket: WebSocket, session_id: str, after: int = 0,
                     token: str | None = None) -> None:
        """Send every event after `after`, then each new one as it is appended."""
        header = websocket.headers.get("authorization", "")
        given = token or (header[7:] if header.lower().startswith("bearer ") else "")
        user = tokens.user_for(given)
        if user is None:
            await websocket.close(code=4401, reason="missing or unknown token")
            return
        try:
            row = service.owned(session_id, user)
        except SessionNotFound:
            await websocket.close(code=4404, reason="no such session")
            return
        await websocket.accept()
        with contextlib.suppress(WebSocketDisconnect):
            await _tail(websocket, store, notifier, row.id, max(after, 0), poll_s)

    @app.get("/sessions/{session_id}/trajectory", responses=_ERRORS, tags=["events"])
    async def session_trajectory(session_id: str, user: User) -> dict[str, Any]:
        """The session as `codeloop export` writes it (format `codeloop-trajectory/1`), for
        the viewer at /view."""
        row = service.owned(session_id, user)
        return await asyncio.to_thread(_trajectory, service, row, user)

    @app.get("/sessions/{session_id}/approvals", responses=_ERRORS, tags=["approvals"])
    async def approvals(session_id: str, user: User) -> list[PendingApproval]:
        """Tool calls and plans waiting for a person's answer."""
        view = service.view(session_id, user)
        return [PendingApproval(**p) for p in service.pending(view.state)]

    @app.post("/sessions/{session_id}/approvals/{call_id}/approve", responses=_ERRORS,
              tags=["approvals"])
    async def approve(session_id: str, call_id: str, user: User,
                      remember: Annotated[bool, Query(description=(
                          "Also allow calls like this for the rest of the session"))] = False,
                      body: ApprovalIn | None = None) -> SessionOut:
        """Approve the call or plan (optionally remembering it: an allow rule for a call, no
        more questions about plans for a plan); the session runs on."""
        service.decide(session_id, user, call_id, True, body.reason if body else "", remember)
        return _session_out(service, service.owned(session_id, user))

    @app.post("/sessions/{session_id}/approvals/{call_id}/deny", responses=_ERRORS,
              tags=["approvals"])
    async def deny(session_id: str, call_id: str, user: User,
                   body: ApprovalIn | None = None) -> SessionOut:
        """Refuse the call or plan; the model sees the reason and the session runs on."""
        service.decide(session_id, user, call_id, False, body.reason if body else "", False)
        return _session_out(service, service.owned(session_id, user))

    @app.get("/sessions/{session_id}/diff", responses=_ERRORS, tags=["review"])
    async def diff(session_id: str, user: User) -> DiffOut:
        """The session's changes against the user's tree."""
        files, text = await asyncio.to_thread(service.diff, session_id, user)
        return DiffOut(files=files, diff=text)

    @app.post("/sessions/{session_id}/apply", responses=_ERRORS, tags=["review"])
    async def apply(session_id: str, user: User) -> ApplyOut:
        """Write the session's changes into the user's tree."""
        result = await asyncio.to_thread(service.apply, session_id, user)
        return ApplyOut(applied=result.applied, conflicts=result.conflicts,
                        refused=result.refused)

    @app.post("/sessions/{session_id}/discard", responses=_ERRORS, tags=["review"])
    async def discard(session_id: str, user: User) -> SessionOut:
        """Throw the session's changes away."""
        await asyncio.to_thread(service.discard, session_id, user)
        return _session_out(service, service.owned(session_id, user))

    @app.post("/sessions/{session_id}/reject", responses=_ERRORS, tags=["review"])
    async def reject(session_id: str, body: RejectIn, user: User) -> SessionOut:
        """Send the result back with feedback; the agent continues with it as an instruction."""
        service.reject(session_id, user, body.feedback)
        return _session_out(service, service.owned(session_id, user))

    app.include_router(memory_router(current_user, service, data_dir, _ERRORS))
    add_admin_routes(app, admin, guard)
    return app


def _trajectory(service: SessionService, row: SessionRow, user: str) -> dict[str, Any]:
    events = service.events(row.id, 0)
    try:
        _, text = service.diff(row.id, user)
    except CodeloopError:  # the repository is gone: the log's own edits are what is left
        return trajectory(row, events, logged_diff(events), "log")
    return trajectory(row, events, text)


async def _tail(websocket: WebSocket, store: EventStore, notifier: Notifier,
                session_id: str, after: int, poll_s: float) -> None:
    """Send events in order from `after` on; the wake event is taken before each read, so
    an append between the read and the wait is never missed."""
    last = after
    closed = asyncio.ensure_future(_until_closed(websocket))
    try:
        while not closed.done():
            wake = notifier.current(session_id)
            batch = store.read_wire(session_id, last)
            for seq, message in batch:
                await websocket.send_text(message)
                last = seq
            if batch:
                continue
            waiter = asyncio.ensure_future(wake.wait())
            await asyncio.wait({waiter, closed}, timeout=poll_s,
                               return_when=asyncio.FIRST_COMPLETED)
            waiter.cancel()
    finally:
        closed.cancel()


async def _until_closed(websocket: WebSocket) -> None:
    with contextlib.suppress(WebSocketDisconnect):
        while True:
            await websocket.receive_text()
