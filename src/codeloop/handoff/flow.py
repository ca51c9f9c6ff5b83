"""`apply ID --branch NAME [--commit]`: plan the branch commit, write its message, commit it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from codeloop.config import Settings, load_settings
from codeloop.config_tables import HandoffSettings
from codeloop.errors import CodeloopError
from codeloop.events import BranchCommitted, Event
from codeloop.handoff.branch import (
    BranchRefused,
    check_branch_name,
    commit_plan,
    plan_branch,
    resolve_base,
)
from codeloop.handoff.message import clean, recorded_message, with_trailers, write_message
from codeloop.handoff.steps import group_by_step
from codeloop.policy.redact import Redactor
from codeloop.session.resume import session_settings
from codeloop.session.state import SessionState, fold
from codeloop.session.store import EventStore
from codeloop.workspace.base import LayeredWorkspace


@dataclass
class PlannedCommit:
    message: str
    files: list[str]
    commit: str | None = None


@dataclass
class HandOff:
    """What `--branch` did (commit set) or would do (commit None)."""

    branch: str
    base: str
    files: list[str]
    message: str
    message_source: str
    commit: str | None = None
    # New files left out because git ignores them.
    ignored: list[str] = field(default_factory=list)
    # The commits in order: one, or one per plan step with `per_step`.
    commits: list[PlannedCommit] = field(default_factory=list)


def _model_settings(state: SessionState, model: str, current: Settings) -> Settings | None:
    """The session's own model settings with the user's key; None when there is no model."""
    try:
        settings = session_settings(state, current.api_key)
    except CodeloopError:
        return None
    return settings.model_copy(update={"model": settings.model or model})


def step_commits(events: list[Event], files: list[str], handoff: HandoffSettings,
                 session_id: str) -> list[PlannedCommit]:
    """One commit per plan step that changed files, its message from the step (by rule)."""
    out = []
    for group in group_by_step(events, files):
        subject = clean(group.title, Redactor.from_environment()) or "Plan step"
        body = "\n\n".join(p for p in (group.detail.strip(), "Files: " + ", ".join(group.files))
                           if p)
        out.append(PlannedCommit(with_trailers(f"{subject}\n\n{body}", handoff, session_id),
                                 group.files))
    return out


def branch_handoff(store: EventStore, session_id: str, ws: LayeredWorkspace,
                   branch: str, commit: bool, per_step: bool = False) -> HandOff:
    """Build (and with `commit`, write) the session's branch commit, or one per plan step
    with `per_step`; the user's tree, index and current branch are never touched."""
    row = store.get(session_id)
    repo = Path(row.repo)
    current = load_settings(repo)
    ref = check_branch_name(repo, branch)
    events = [e.event for e in store.read(row.id)]
    state = fold(store.read(row.id))
    base = resolve_base(repo, state.started.base_commit if state.started else None)
    raw, verdict = ws.pending()
    plan = plan_branch(repo, base, raw, verdict)
    if not plan.changes:
        raise BranchRefused(f"session {row.id} changed nothing", "there is nothing to commit")
    digest = plan.digest()
    written = recorded_message(events, digest)
    if written is None:
        def emit(event: Event) -> None:
            store.append(row.id, [event])

        def state_now() -> SessionState:
            return fold(store.read(row.id))

        diff = "".join(c.diff for c in ws.changes() if c.path not in plan.ignored)
        written = write_message(state, _model_settings(state, row.model, current), diff,
                                plan.files, digest, emit, state_now)
    message = with_trailers(written.message, current.handoff, row.id)
    out = HandOff(branch, base, plan.files, message, written.source, ignored=plan.ignored)
    steps = step_commits(events, plan.files, current.handoff, row.id) if per_step else []
    # Per step only when the plan splits the change: one group is the single commit.
    out.commits = steps if len(steps) > 1 else [PlannedCommit(message, plan.files)]
    if commit:
        made = commit_plan(repo, plan, ref, [(c.message, c.files) for c in out.commits],
                           current.handoff.author, f"codeloop: session {row.id}")
        for planned, made_id in zip(out.commits, made, strict=True):
            planned.commit = made_id
        out.commit = made[-1]
        store.append(row.id, [BranchCommitted(branch=branch, commit=out.commit, base=base,
                                              files=plan.files, commits=made)])
    return out
