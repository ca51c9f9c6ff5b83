"""Calls from the session's thread to the editor: permission requests (codeloop's approvals)
and reads of unsaved buffers. The runner is synchronous; the ACP connection lives on the
event loop, so each call is scheduled there and waited for."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
from collections.abc import Coroutine
from typing import Any, TypeVar

from acp import helpers
from acp.exceptions import RequestError
from acp.interfaces import Client
from acp.schema import AllowedOutcome, PermissionOption, ToolCallUpdate
from pydantic import ValidationError

from codeloop.editor.updates import clean, title_of, tool_kind
from codeloop.errors import CodeloopError
from codeloop.events import ApprovalGiven, ApprovalRequested, SystemNote, ToolCallData
from codeloop.policy.engine import remember_rule
from codeloop.tools.base import ToolContext
from codeloop.tools.edit_tools import EDIT_TOOL_TYPES, preview_diff
from codeloop.workspace.hostfs import SafeRoot

T = TypeVar("T")
READ_TIMEOUT_S = 10.0

OPTIONS = [
    PermissionOption(option_id="allow_once", name="Allow", kind="allow_once"),
    PermissionOption(option_id="allow_always", name="Always allow this", kind="allow_always"),
    PermissionOption(option_id="reject_once", name="Reject", kind="reject_once"),
]


class EditorBridge:
    """What the session's thread may ask of the editor for one ACP session."""

    def __init__(self, conn: Client, loop: asyncio.AbstractEventLoop, session_id: str,
                 can_read: bool) -> None:
        self.conn = conn
        self.loop = loop
        self.session_id = session_id
        self.can_read = can_read
        self.context: ToolContext | None = None
        self.taken: set[str] = set()

    def call(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def approve(self, request: ApprovalRequested, call: ToolCallData) -> ApprovalGiven | None:
        """codeloop's approval as an ACP permission request; a cancelled request pauses."""
        args = call.arguments or {}
        content = None
        if call.name in EDIT_TOOL_TYPES and self.context is not None:
            try:
                diff = preview_diff(call.name, args, self.context)
            except (CodeloopError, ValidationError, OSError):
                diff = ""  # a preview that fails still leaves the question to ask
            if diff:
                content = [helpers.tool_content(helpers.text_block(clean(diff)))]
        update = ToolCallUpdate(tool_call_id=call.id, title=title_of(call.name, args),
                                kind=tool_kind(call.name), status="pending", content=content,
                                raw_input=json.loads(clean(json.dumps(args))))
        response = self.call(self.conn.request_permission(
            session_id=self.session_id, tool_call=update, options=OPTIONS))
        outcome = response.outcome
        if not isinstance(outcome, AllowedOutcome):
            return None
        if outcome.option_id == "reject_once":
            return ApprovalGiven(call_id=call.id, approved=False, digest=request.digest,
                                 reason="rejected in the editor", by="editor")
        rule = remember_rule(call.name, args) if outcome.option_id == "allow_always" else None
        return ApprovalGiven(call_id=call.id, approved=True, digest=request.digest,
                             remember_rule=rule, by="editor")

    def take_buffer(self, rel: str, ctx: ToolContext) -> None:
        """On the first read of `rel`: the editor's text, if it differs from the file on
        disk, becomes the workspace's copy (an unsaved buffer), with a note in the log. A file
        the session has already changed keeps the session's copy."""
        if not self.can_read or rel in self.taken:
            return
        self.taken.add(rel)
        root = ctx.workspace.root
        try:
            current = ctx.workspace.read(rel)
            if current != SafeRoot(root).read_if_file(rel):
                return
            text = self.call(self.conn.read_text_file(session_id=self.session_id,
                                                      path=str(root / rel)),
                             READ_TIMEOUT_S).content
        except (OSError, RequestError, CodeloopError, concurrent.futures.TimeoutError):
            return  # the editor has no such buffer or the file is new: the disk stands
        if text.encode() != current:
            ctx.workspace.write(rel, text.encode())
            ctx.emit(SystemNote(kind="editor_buffer",
                                text=f"{rel}: read from the editor's unsaved buffer"))
