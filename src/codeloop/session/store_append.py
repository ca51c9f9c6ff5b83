"""What an append writes, shared by the stores: the rows for new events, the listing's fold,
and the check that makes a replayed append (same session, same seqs) a no-op."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from codeloop.errors import StoreError
from codeloop.events import Event, SettingsOverridden

# (session_id, seq, type, ts, data): one row of the events table.
EventRow = tuple[str, int, str, float, str]


def summary_updates(event: Event) -> dict[str, object]:
    """What an event changes in the session listing (the listing is a fold too)."""
    kind = event.type
    if kind == "session_started":
        return {"task": getattr(event, "task", ""), "repo": getattr(event, "repo", ""),
                "model": getattr(event, "model", ""), "status": "running"}
    if kind == "session_resumed":
        return {"status": "running"}
    if isinstance(event, SettingsOverridden) and event.changes.get("model"):
        return {"model": event.changes["model"]}
    if kind == "session_paused":
        return {"status": "paused"}
    if kind == "session_finished":
        return {"status": getattr(event, "status", "finished")}
    if kind == "approval_requested":
        return {"status": "waiting_approval"}
    if kind == "approval_given":
        return {"status": "running"}
    if kind == "review_decided" and getattr(event, "action", "") == "reject":
        return {"status": "running"}
    if kind == "user_message" and getattr(event, "reopens", False):
        return {"status": "running"}  # main's UserMessage.reopens (ACP follow-up prompts)
    return {}


@dataclass
class AppendPlan:
    """The rows to insert and the listing columns they change."""

    last_seq: int
    rows: list[EventRow] = field(default_factory=list)
    updates: dict[str, object] = field(default_factory=dict)
    steps: int = 0
    cost_usd: float = 0.0


def plan_append(session_id: str, events: Sequence[Event], last_seq: int, after_seq: int | None,
                stored: Callable[[int, int], Mapping[int, str]]) -> AppendPlan:
    """Number `events` after `after_seq` (default: the log's end). Events whose seq is already
    stored with the same JSON are skipped, so a retried append writes nothing twice; a
    different event at one of those seqs is a conflict. `stored(lo, hi)` gives the stored JSON
    for seqs in (lo, hi]."""
    base = last_seq if after_seq is None else after_seq
    if base > last_seq or base < 0:
        raise StoreError(f"cannot append to session {session_id} after seq {base}: "
                         f"its log ends at {last_seq}",
                         "read the log again and append after its last event")
    present = stored(base, base + len(events)) if base < last_seq else {}
    plan = AppendPlan(last_seq=base + len(events))
    for n, event in enumerate(events):
        seq = base + n + 1
        data = event.model_dump_json(exclude_none=False)
        if seq <= last_seq:
            if present.get(seq) != data:
                raise StoreError(
                    f"conflicting append to session {session_id}: seq {seq} already holds "
                    "another event", "another writer appended; read the log again")
            continue
        plan.rows.append((session_id, seq, event.type, event.ts, data))
        plan.updates.update(summary_updates(event))
        if event.type == "model_call_finished":
            plan.steps += 1
        if event.type in ("model_call_finished", "auxiliary_model_call"):
            plan.cost_usd += float(getattr(event, "cost_usd", 0.0))
    return plan


def wire_message(seq: int, kind: str, ts: float, data: str) -> str:
    """One streamed event as JSON, the stored event JSON spliced in unparsed."""
    return f'{{"seq":{int(seq)},"type":{json.dumps(kind)},"ts":{float(ts)!r},"event":{data}}}'


def wait_for_append(last_seq: Callable[[], int], cond: threading.Condition, after_seq: int,
                    timeout: float) -> bool:
    """Whether the session's log passes `after_seq` within `timeout`. Appends from this
    process notify `cond` at once; other processes' are seen by polling every 50 ms."""
    deadline = time.monotonic() + timeout
    while True:
        if last_seq() > after_seq:
            return True
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        with cond:
            cond.wait(min(remaining, 0.05))
