"""The full trajectory of a session as one JSON document, for evaluation and sharing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from codeloop.context.messages import build_messages
from codeloop.errors import CodeloopError
from codeloop.events import (
    Event,
    FileEdited,
    McpServerConnected,
    ModelCallStarted,
    SessionStarted,
    StoredEvent,
)
from codeloop.session.role_budgets import role_budget_rows
from codeloop.session.state import SessionState, apply, summary_dict
from codeloop.session.store import SessionRow

EXPORT_FORMAT = "codeloop-trajectory/1"


def _message_dict(m: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"role": m.role, "content": m.content}
    if m.tool_calls:
        out["tool_calls"] = [c.model_dump() for c in m.tool_calls]
    if m.tool_call_id:
        out["tool_call_id"] = m.tool_call_id
    return out


def trajectory(row: SessionRow, events: list[StoredEvent], diff: str | None,
               diff_source: str = "workspace") -> dict[str, Any]:
    """Every event, every model request as it was sent, the totals and the final diff
    (`diff_source`: "workspace", or "log" when only the log's edits could give it)."""
    state = SessionState()
    requests = []
    for stored in events:
        event: Event = stored.event
        if isinstance(event, ModelCallStarted) and isinstance(state.started, SessionStarted):
            messages = build_messages(state.started, state.transcript)
            requests.append({"seq": stored.seq, "step": event.step,
                             "messages": [_message_dict(m) for m in messages]})
        apply(state, stored)
    return {
        "format": EXPORT_FORMAT,
        "session": {"id": row.id, "created": row.created, "repo": row.repo, "model": row.model,
                    "status": row.status},
        "summary": {**summary_dict(state), "role_budgets": role_budget_rows(state)},
        "tools": _tools(state, events),
        "requests": requests,
        "events": [{"seq": s.seq, **s.event.model_dump(mode="json")} for s in events],
        "diff": diff,
        "diff_source": diff_source,
    }


def _tools(state: SessionState, events: list[StoredEvent]) -> list[dict[str, Any]]:
    """The built-in tools from the start, then each MCP server's as it last connected (a
    resumed run connects again)."""
    tools = {t["name"]: t for t in (state.started.tools if state.started else [])}
    for stored in events:
        if isinstance(stored.event, McpServerConnected):
            tools.update((t["name"], t) for t in stored.event.specs)
    return list(tools.values())


def logged_diff(events: list[StoredEvent]) -> str:
    """The session's edits as the log recorded them, one diff per edit in order: what is
    left to show when the repository the workspace sat on is gone."""
    return "".join(s.event.diff for s in events if isinstance(s.event, FileEdited))


class TrajectoryError(CodeloopError):
    """A file given to `replay` is not a trajectory `codeloop export` wrote."""


class _Call(BaseModel):
    id: str
    name: str
    arguments: dict[str, Any] | None = None
    raw_arguments: str = ""


class _Event(BaseModel):
    model_config = ConfigDict(extra="allow")

    type: str
    text: str = ""
    tool_calls: list[_Call] = Field(default_factory=list)


class _Named(BaseModel):
    repo: str


class _Summary(BaseModel):
    task: str


class _Replayable(BaseModel):
    """The parts of a trajectory a replay reads."""

    format: str
    session: _Named
    summary: _Summary
    events: list[_Event]


def read_trajectory(path: Path) -> dict[str, Any]:
    """A trajectory file, checked wherever a replay reads it; else a one-line error."""
    remedy = "(write one with `codeloop export ID -o FILE`)"
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise TrajectoryError(f"cannot read trajectory {path}: {exc} {remedy}") from exc
    if not isinstance(doc, dict) or str(doc.get("format", "")).split("/")[0] != "codeloop-trajectory":
        raise TrajectoryError(f"{path} is not a codeloop trajectory {remedy}")
    try:
        _Replayable.model_validate(doc)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise TrajectoryError(f"{path} is not a complete trajectory: {where}: {first['msg']} "
                              f"{remedy}") from exc
    return doc
