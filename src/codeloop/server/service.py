"""What the API does to sessions: create, run in the pool, steer, approve, review.

Only one writer appends to a session at a time: its runner while it is queued or running,
the API otherwise (every API append below checks the session is not active first).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codeloop.config import Settings, load_settings
from codeloop.errors import CodeloopError, SessionNotFound
from codeloop.events import (
    ApprovalGiven,
    ReviewDecided,
    SessionFinished,
    SessionPaused,
    StoredEvent,
    UserMessage,
)
from codeloop.llm.factory import make_model
from codeloop.llm.roles import make_role_models, make_router
from codeloop.llm.types import Model
from codeloop.planner.model import Plan
from codeloop.policy import remember_rule
from codeloop.server.guard import Guard
from codeloop.server.pool import WorkerPool
from codeloop.server.roots import RepoNotAllowed, allowed_repo, real_roots
from codeloop.server.tenants import TenantStore
from codeloop.session.cleanup import drop_view_index, end_run
from codeloop.session.control import Control
from codeloop.session.resume import session_settings
from codeloop.session.setup import (
    RuntimeParts,
    build_runner,
    make_policy,
    open_workspace_and_sandbox,
    session_dir,
    start_session,
)
from codeloop.session.state import SessionState, fold
from codeloop.session.store import LOCAL_OWNER, EventStore, SessionRow
from codeloop.workspace.base import ApplyResult, Workspace

log = logging.getLogger(__name__)

ModelFactory = Callable[[str, Settings], Model]

# The reason recorded when a server stops: such a pause is resumed when a server starts.
SERVER_SHUTDOWN = "server shut down"
_OVER_OR_PAUSED = {"paused", "waiting_approval"}


class Conflict(CodeloopError):
    """The session is not in a state where this action makes sense (HTTP 409)."""


@dataclass
class SessionView:
    row: SessionRow
    state: SessionState


def plan_dict(plan: Plan) -> dict[str, Any]:
    return {"call_id": plan.call_id, "summary": plan.summary, "approval": plan.approval,
            "done": plan.done, "total": len(plan.steps), "steps": list(plan.steps),
            "revision": plan.revision}


class SessionService:
    def __init__(self, data_dir: Path, store: EventStore, roots: Sequence[Path],
                 model_factory: ModelFactory | None = None, per_user: int = 2,
                 max_workers: int = 16, defaults: Settings | None = None,
                 guard: Guard | None = None) -> None:
        self.data_dir = data_dir
        url = getattr(store, "url", None)  # the tenants live where the events do
        self.guard = guard or Guard(TenantStore(data_dir, url if isinstance(url, str) else None),
                                    store)
        self.roots = real_roots(roots)
        self.store = store
        self.model_factory: ModelFactory = model_factory or make_model
        self.defaults = defaults
        self.pool = WorkerPool(self._run_session, per_user=per_user, max_workers=max_workers)

    # -- reading ---------------------------------------------------------------------------

    def owned(self, session_id: str, user: str) -> SessionRow:
        """The session if `user` may see it; others' sessions do not exist (404)."""
        row = self.store.get(session_id)
        if row.owner not in self.guard.visible_owners(user):
            raise SessionNotFound(f"no session {session_id!r}")
        return row

    def acting(self, session_id: str, user: str, action: str) -> SessionRow:
        """The session if `user` may see it and their role lets them `action` it (403)."""
        row = self.owned(session_id, user)
        self.guard.check_action(user, row.owner, action)
        return row

    def view(self, session_id: str, user: str) -> SessionView:
        row = self.owned(session_id, user)
        return SessionView(row, fold(self.store.read(row.id)))

    def events(self, session_id: str, after: int) -> list[StoredEvent]:
        return self.store.read(session_id, after)

    def repo_of(self, row: SessionRow) -> Path:
        """The session's repository, if it is still inside the allowed roots and still
        resolves to the path recorded when the session started (a root removed since, or
        a directory swapped for a link, stops every later use)."""
        repo = allowed_repo(row.repo, self.roots)
        if str(repo) != row.repo:
            raise RepoNotAllowed(f"repository {row.repo} now resolves to {repo}",
                                 "start a new session on the repository's real path")
        self.guard.check_repo(row.owner, repo)
        return repo

    # -- creating and running -------------------------------------------------------------

    def create(self, user: str, task: str, repo: Path, model: str | None,
               budgets: dict[str, Any], approval_mode: str | None,
               plan_approval: bool | None = None) -> str:
        """Record a new session (blocking: reads the repository); `pool.submit` runs it."""
        repo = allowed_repo(repo, self.roots)  # before anything reads from it
        self.guard.check_repo(user, repo)
        flags: dict[str, Any] = {"model": model, "approval_mode": approval_mode,
                                 "plan_approval": plan_approval}
        if budgets:
            flags["budgets"] = budgets
        settings = self._settings(repo, flags, budgets)
        if not (settings.model or settings.models.coder):
            raise CodeloopError("no model given for the session",
                                "pass \"model\": \"PROVIDER:MODEL\" (or scripted:FILE)")
        # Checked and recorded under one lock: two requests at once cannot both take the
        # tenant's last free session.
        with self.guard.admission:
            settings = self.guard.admit(user, settings, budgets.get("max_cost_usd"))
            # Every role's model is made now, so a bad one fails the request, not the run.
            main = make_role_models(settings, self.model_factory).primary("coder")
            return start_session(self.store, task, repo, settings, main.name, owner=user)

    def _settings(self, repo: Path, flags: dict[str, Any], budgets: dict[str, Any]) -> Settings:
        """The server's default settings (or the usual layers when it has none) plus the request."""
        if self.defaults is None:
            return load_settings(repo, flags)
        data = self.defaults.model_dump()
        data.update({k: v for k, v in flags.items() if v is not None and k != "budgets"})
        data["budgets"].update(budgets)
        return Settings.model_validate(data)

    def _run_session(self, session_id: str, control: Control) -> None:
        """The worker-thread job: fold the log, build a runner, run until it ends or pauses."""
        row = self.store.get(session_id)
        state = fold(self.store.read(session_id))
        try:
            repo = self.repo_of(row)
            # The key sessions use: never in the log, always the server's own settings.
            own = self.defaults or load_settings(repo)
            settings = session_settings(state, own.api_key)
            # MCP servers, like the key, are never in the log: the server's own, as now.
            settings = settings.model_copy(update={"model": settings.model or row.model,
                                                   "mcp": own.mcp})
            models = make_role_models(settings, self.model_factory)
            runner = build_runner(
                self.store, session_id, repo, settings, models.primary("coder"),
                base_dir=self.data_dir,
                parts=RuntimeParts(policy=make_policy(settings), control=control),
                router=make_router(settings, models),
            )
        except CodeloopError as exc:
            # Nobody is watching a server's worker: the reason goes into the log. A session
            # that has run before stays resumable (what failed may be fixed meanwhile).
            hint = f" ({exc.hint})" if exc.hint else ""
            reason = f"cannot start the session: {exc.message}{hint}"
            self.store.append(session_id, [SessionPaused(reason=reason) if state.last_seq > 1
                                           else SessionFinished(status="error", reason=reason)])
            return
        try:
            final = runner.run()
        finally:
            end_run(runner.ctx)
            self.guard.after_run(row.owner)
        if self.pool.closing and final.status == "paused" and not final.is_over:
            self.store.append(session_id, [SessionPaused(reason=SERVER_SHUTDOWN)])

    def recover(self) -> list[str]:
        """Queue the sessions a previous server left running (or paused when it shut down).
        The command line's sessions are not the server's to take over: `codeloop run` may
        still be driving one, and `codeloop resume` continues one that was killed."""
        resumed = []
        for row in self.store.sessions():
            if row.owner == LOCAL_OWNER:
                continue
            if row.status == "paused":
                last = self.store.read(row.id, max(row.last_seq - 1, 0))
                if not (last and isinstance(last[-1].event, SessionPaused)
                        and last[-1].event.reason == SERVER_SHUTDOWN):
                    continue
            elif row.status != "running":
                continue
            self.pool.submit(row.id, row.owner)
            resumed.append(row.id)
        return resumed

    # -- steering ---------------------------------------------------------------------------

    def _idle(self, row: SessionRow, action: str) -> None:
        if self.pool.is_active(row.id):
            raise Conflict(f"session {row.id} is running; cannot {action} now",
                           "pause it first, or wait for it to stop")

    def cancel(self, session_id: str, user: str) -> None:
        row = self.acting(session_id, user, "cancel sessions")
        control = self.pool.control(row.id)
        if control is not None:
            control.request_stop()
            return
        self.pool.unqueue(row.id)
        if fold(self.store.read(row.id)).is_over:
            raise Conflict(f"session {row.id} has already ended")
        self.store.append(row.id, [SessionFinished(status="cancelled",
                                                   reason="cancelled by the user")])

    def pause(self, session_id: str, user: str) -> None:
        row = self.acting(session_id, user, "pause sessions")
        control = self.pool.control(row.id)
        if control is not None:
            control.request_pause()
            return
        if self.pool.unqueue(row.id):
            self.store.append(row.id, [SessionPaused(reason="paused by the user")])
            return
        raise Conflict(f"session {row.id} is not running ({row.status})")

    def resume(self, session_id: str, user: str) -> None:
        row = self.acting(session_id, user, "resume sessions")
        self._idle(row, "resume it")
        state = fold(self.store.read(row.id))
        if state.is_over:
            raise Conflict(f"session {row.id} has ended ({state.status})",
                           "reject it with feedback to make it continue")
        if state.pending_approvals:
            raise Conflict(f"session {row.id} waits for an approval",
                           "approve or deny the pending call or plan")
        self.guard.check_day(row.owner)
        self.pool.submit(row.id, row.owner)

    # -- approvals --------------------------------------------------------------------------

    def pending(self, state: SessionState) -> list[dict[str, Any]]:
        """Calls waiting for an answer (none once the session has ended)."""
        if state.is_over:
            return []
        out = []
        for request in state.pending_approvals.values():
            call = next((c for c in state.requested if c.id == request.call_id), None)
            args = call.arguments if call is not None else None
            proposal = state.proposals.get(request.call_id)
            out.append({"call_id": request.call_id, "name": request.name,
                        "summary": request.summary, "digest": request.digest,
                        "arguments": args, "remember_rule": remember_rule(request.name, args or {}),
                        "kind": "tool" if proposal is None else "plan",
                        "plan": None if proposal is None else plan_dict(proposal)})
        return out

    def decide(self, session_id: str, user: str, call_id: str, approved: bool, reason: str,
               remember: bool) -> None:
        row = self.acting(session_id, user, "approve calls" if approved else "deny calls")
        self._idle(row, "answer an approval")
        state = fold(self.store.read(row.id))
        request = None if state.is_over else state.pending_approvals.get(call_id)
        if request is None:
            raise SessionNotFound(f"no pending approval {call_id!r} in session {row.id}")
        rule = None
        if approved and remember:
            call = next((c for c in state.requested if c.id == call_id), None)
            rule = remember_rule(request.name, (call.arguments if call else None) or {})
        self.store.append(row.id, [ApprovalGiven(
            call_id=call_id, approved=approved, digest=request.digest, reason=reason,
            remember_rule=rule, by=user)])
        self.pool.submit(row.id, row.owner)

    # -- review -------------------------------------------------------------------------------

    def workspace(self, row: SessionRow) -> Workspace | None:
        state_dir = session_dir(row.id, self.data_dir)
        if not (state_dir / "workspace").exists():
            return None
        repo = self.repo_of(row)
        settings = session_settings(fold(self.store.read(row.id)))
        workspace, _ = open_workspace_and_sandbox(repo, state_dir, settings)
        return workspace

    def diff(self, session_id: str, user: str) -> tuple[list[str], str]:
        row = self.owned(session_id, user)
        workspace = self.workspace(row)
        if workspace is None:
            return [], ""
        return workspace.changed_files(), workspace.diff()

    def _reviewable(self, row: SessionRow) -> Workspace:
        self._idle(row, "review it")
        state = fold(self.store.read(row.id))
        if not state.is_over and state.status not in _OVER_OR_PAUSED:
            raise Conflict(f"session {row.id} is {state.status}", "review it once it stops")
        workspace = self.workspace(row)
        if workspace is None:
            raise Conflict(f"session {row.id} has no changes to review")
        return workspace

    def apply(self, session_id: str, user: str) -> ApplyResult:
        row = self.acting(session_id, user, "apply changes")
        result = self._reviewable(row).apply()
        self.store.append(row.id, [ReviewDecided(action="apply", files=result.applied)])
        return result

    def discard(self, session_id: str, user: str) -> None:
        row = self.acting(session_id, user, "discard changes")
        workspace = self._reviewable(row)
        files = workspace.changed_files()
        drop_view_index(workspace)
        workspace.discard()
        self.store.append(row.id, [ReviewDecided(action="discard", files=files)])

    def reject(self, session_id: str, user: str, feedback: str) -> None:
        """Send the result back: the feedback is the agent's next instruction; it runs on."""
        row = self.acting(session_id, user, "reject results")
        self._idle(row, "reject it")
        self.guard.check_day(row.owner)
        self.store.append(row.id, [
            UserMessage(text=f"The reviewer rejected the result: {feedback}", source="review"),
            ReviewDecided(action="reject", feedback=feedback),
        ])
        self.pool.submit(row.id, row.owner)
