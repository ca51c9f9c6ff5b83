from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from codeloop.index.service import forget_open_indexes


@pytest.fixture(autouse=True)
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    cache = tmp_path / "cache"
    monkeypatch.setenv("CODELOOP_CACHE_DIR", str(cache))
    yield cache
    forget_open_indexes()
