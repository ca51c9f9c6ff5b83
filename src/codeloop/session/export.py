"""The full trajectory of a session as one JSON document, for evaluation and sharing."""

from __future__ import annotations

from typing import Any

from codeloop.context.messages import build_messages
from codeloop.events import Event, ModelCallStarted, SessionStarted, StoredEvent
from codeloop.session.state import SessionState, apply, fold, summary_dict
from codeloop.session.store import SessionRow

EXPORT_FORMAT = "codeloop-trajectory/1"


def _message_dict(m: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"role": m.role, "content": m.content}
    if m.tool_calls:
        out["tool_calls"] = [c.model_dump() for c in m.tool_calls]
    if m.tool_call_id:
        out["tool_call_id"] = m.tool_call_id
    return out


def trajectory(row: SessionRow, events: list[StoredEvent], diff: str | None) -> dict[str, Any]:
    """Every event, every model request as it was sent, the totals and the final diff."""
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
        "summary": summary_dict(fold(events)),
        "tools": state.started.tools if state.started else [],
        "requests": requests,
        "events": [{"seq": s.seq, **s.event.model_dump(mode="json")} for s in events],
        "diff": diff,
    }
