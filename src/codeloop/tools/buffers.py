"""Unsaved editor buffers as the source of a file: when codeloop runs inside an editor (ACP),
the first read of a file asks the editor for its text, and an unsaved buffer that differs
from the disk is taken into the session's workspace, so the model works on what the person
sees."""

from __future__ import annotations

from collections.abc import Callable

from codeloop.tools.base import ToolContext

# The ToolContext service: called with the repository-relative path before a read.
EDITOR_BUFFERS = "editor_buffers"
BufferSource = Callable[[str, ToolContext], None]


def take_in_editor_buffer(ctx: ToolContext, rel: str) -> None:
    """Let the editor's buffer of `rel` (if any, and unsaved) become the workspace's copy."""
    source: BufferSource | None = ctx.services.get(EDITOR_BUFFERS)
    if source is not None:
        source(rel, ctx)
