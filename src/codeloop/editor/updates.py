"""The session's log as ACP session updates: messages, thoughts, tool calls, diffs, the plan.

Every text shown to the editor comes from a model, a tool or the repository: it is scrubbed
of escapes and hidden characters first (`policy.scrub`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from acp import helpers
from acp.schema import (
    AgentMessageChunk,
    AgentPlanUpdate,
    AgentThoughtChunk,
    ToolCallLocation,
    ToolCallProgress,
    ToolCallStart,
    ToolKind,
    UserMessageChunk,
)

from codeloop.events import (
    ApprovalRequested,
    FileEdited,
    ModelCallFinished,
    PlanProposed,
    PlanUpdated,
    SessionFinished,
    SessionPaused,
    SessionStarted,
    StoredEvent,
    ToolCallFinished,
    ToolCallStarted,
    UserMessage,
    VerificationRan,
)
from codeloop.llm.types import StreamDelta
from codeloop.policy.scrub import scrub
from codeloop.session.state import SessionState, apply
from codeloop.workspace.base import Workspace
from codeloop.workspace.hostfs import SafeRoot

Update = AgentMessageChunk | AgentThoughtChunk | ToolCallStart | ToolCallProgress | AgentPlanUpdate

KINDS: dict[str, ToolKind] = {
    "read_file": "read", "list_files": "read",
    "grep": "search", "search_code": "search", "find_symbol": "search",
    "find_references": "search", "repo_map": "search",
    "edit_file": "edit", "write_file": "edit", "apply_patch": "edit",
    "run": "execute", "run_tests": "execute", "run_checks": "execute",
    "propose_plan": "think", "update_plan": "think",
}
OUTPUT_MAX = 4000
_PLAN_STATUS = {"pending": "pending", "in_progress": "in_progress", "done": "completed",
                "skipped": "completed"}


def clean(text: str) -> str:
    return scrub(text).text


def title_of(name: str, args: dict[str, Any] | None) -> str:
    """A one-line title: the tool and what it works on."""
    args = args or {}
    target = args.get("command") or args.get("path") or args.get("pattern") or \
        args.get("query") or args.get("summary") or ""
    return clean(f"{name} {target}".strip().splitlines()[0] if target else name)[:200]


def tool_kind(name: str) -> ToolKind:
    return KINDS.get(name, "other")


class UpdateMapper:
    """Turns stored events (and streamed text) into session updates, in order."""

    def __init__(self, repo: Path, workspace: Workspace | None = None) -> None:
        self.repo = repo
        self.workspace = workspace
        self.state = SessionState()
        self.streamed = False
        self.open_call: str | None = None
        # Calls already shown as pending (asked about before they ran).
        self.announced: set[str] = set()

    def on_delta(self, delta: StreamDelta) -> list[Update]:
        if not delta.text:
            return []
        self.streamed = True
        return [helpers.update_agent_message_text(clean(delta.text))]

    def on_event(self, stored: StoredEvent) -> list[Update]:
        self.state = apply(self.state, stored)
        event = stored.event
        if isinstance(event, ModelCallFinished):
            out: list[Update] = []
            if event.text and not self.streamed:
                out.append(helpers.update_agent_message_text(clean(event.text)))
            if event.text:
                out.append(helpers.update_agent_message_text("\n\n"))
            self.streamed = False
            return out
        if isinstance(event, ApprovalRequested):
            # Shown before the permission request that names it, so the editor knows it.
            self.announced.add(event.call_id)
            summary = clean(event.summary).strip().splitlines() or [event.name]
            return [helpers.start_tool_call(event.call_id, summary[0][:200],
                                            kind=tool_kind(event.name), status="pending")]
        if isinstance(event, ToolCallStarted):
            self.open_call = event.call.id
            start = self._started(event)
            if event.call.id not in self.announced:
                return [start]
            return [helpers.update_tool_call(start.tool_call_id, title=start.title,
                                             status="in_progress", locations=start.locations,
                                             raw_input=start.raw_input)]
        if isinstance(event, ToolCallFinished):
            self.open_call = None
            text = clean(event.output if event.ok else (event.error or event.output))
            if len(text) > OUTPUT_MAX:
                text = text[:OUTPUT_MAX] + "\n[cut]"
            content = [helpers.tool_content(helpers.text_block(text))] if text else None
            return [helpers.update_tool_call(event.call_id,
                                             status="completed" if event.ok else "failed",
                                             content=content)]
        if isinstance(event, FileEdited) and self.open_call is not None:
            diff = self._diff(event.path)
            return [helpers.update_tool_call(self.open_call, content=[diff])] if diff else []
        if isinstance(event, PlanProposed | PlanUpdated) and self.state.plan is not None:
            return [helpers.update_plan(
                helpers.plan_entry(clean(s.title), priority="medium",
                                   status=_PLAN_STATUS.get(s.status, "pending"))  # type: ignore[arg-type]
                for s in self.state.plan.steps)]
        if isinstance(event, VerificationRan):
            return [helpers.update_agent_thought_text(
                f"tests ({event.phase}): {event.passed} passed, {event.failed} failed\n")]
        if isinstance(event, SessionFinished):
            return [helpers.update_agent_message_text(self._finished(event))]
        if isinstance(event, SessionPaused):
            return [helpers.update_agent_thought_text(f"paused: {clean(event.reason)}\n")]
        return []

    def _started(self, event: ToolCallStarted) -> ToolCallStart:
        call = event.call
        args = call.arguments or {}
        path = args.get("path")
        locations = [ToolCallLocation(path=str(self.repo / path))] \
            if isinstance(path, str) and path and not path.startswith("/") else None
        return helpers.start_tool_call(call.id, title_of(call.name, args),
                                       kind=tool_kind(call.name), status="in_progress",
                                       locations=locations,
                                       raw_input=json.loads(clean(json.dumps(args))))

    def _diff(self, rel: str) -> Any:
        """The file's change so far: the user's copy against the session's."""
        if self.workspace is None:
            return None
        try:
            new = self.workspace.read(rel).decode("utf-8")
        except (OSError, UnicodeDecodeError, ValueError):
            new = ""
        old_bytes = SafeRoot(self.repo).read_if_file(rel)
        old = None if old_bytes is None else old_bytes.decode("utf-8", "replace")
        return helpers.tool_diff_content(str(self.repo / rel), clean(new),
                                         None if old is None else clean(old))

    def _finished(self, event: SessionFinished) -> str:
        sid = self.state.session_id
        lines = [f"\n**{event.status}**" + (f": {clean(event.summary)}" if event.summary else "")]
        if event.reason:
            lines.append(clean(event.reason))
        lines.append(f"Review with `codeloop diff {sid}`; `codeloop apply {sid}` writes the "
                     f"changes into your files, `codeloop apply {sid} --branch NAME --commit` "
                     "onto a new branch.")
        return "\n\n".join(lines) + "\n"


def replay(repo: Path, events: list[StoredEvent]) -> list[Update | UserMessageChunk]:
    """A logged session as the updates an editor shows for it: the task and each follow-up
    as user messages, the rest as it was streamed."""
    mapper = UpdateMapper(repo)
    out: list[Update | UserMessageChunk] = []
    for stored in events:
        event = stored.event
        if isinstance(event, SessionStarted):
            out.append(helpers.update_user_message_text(clean(event.task)))
        elif isinstance(event, UserMessage) and event.source in ("user", "editor"):
            out.append(helpers.update_user_message_text(clean(event.text)))
        out += mapper.on_event(stored)
    return out
