from __future__ import annotations

from pathlib import Path

import pytest
from tests.workspace.wstools import make_repo, open_overlay, overlay_scratch_dir

from codeloop.workspace.overlay import OverlayWorkspace


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    path.mkdir()
    return make_repo(path)


@pytest.fixture
def ws(repo: Path, tmp_path: Path) -> OverlayWorkspace:
    return open_overlay(repo, tmp_path / "state")


@pytest.fixture
def overlay_scratch(tmp_path: Path) -> Path:
    return overlay_scratch_dir(tmp_path)
