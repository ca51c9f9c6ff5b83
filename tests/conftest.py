"""Every test's code indexes live under its tmp_path, never in the user's cache: starting a
session indexes the repository for its repo map."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from codeloop.index.service import forget_open_indexes


@pytest.fixture(autouse=True)
def index_cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    cache = tmp_path / "index-cache"
    monkeypatch.setenv("CODELOOP_CACHE_DIR", str(cache))
    yield cache
    forget_open_indexes()
