from __future__ import annotations

from pathlib import Path

import pytest
from tests.workspace.wstools import make_repo, overlay_unavailable_reason

from codeloop.workspace.factory import open_workspace
from codeloop.workspace.overlay import OverlayWorkspace


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    path.mkdir()
    return make_repo(path)


@pytest.fixture
def ws(repo: Path, tmp_path: Path) -> OverlayWorkspace:
    opened = open_workspace(repo, tmp_path / "state")
    assert isinstance(opened, OverlayWorkspace)
    return opened


@pytest.fixture
def overlay_scratch(tmp_path: Path) -> Path:
    """A scratch dir for overlay upper/work layers; skips (with the reason) without overlays."""
    scratch = tmp_path / "overlay"
    scratch.mkdir()
    reason = overlay_unavailable_reason(scratch)
    if reason:
        print(f"SKIP: {reason}")
        pytest.skip(reason)
    return scratch
