"""Open (or reopen, on resume) the workspace of a session."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from codeloop.workspace.base import LayeredWorkspace
from codeloop.workspace.overlay import OverlayWorkspace


def open_workspace(root: Path, state_dir: Path,
                   prefer: Literal["overlay", "copy"] = "overlay") -> LayeredWorkspace:
    """An overlay workspace; `prefer="copy"` (or a state dir on another filesystem) copies files.

    Reopening an existing state dir keeps the kind it was built with; `kind` says which.
    """
    return OverlayWorkspace(root, state_dir, prefer_copy=prefer == "copy")
