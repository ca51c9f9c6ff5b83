"""Every test gets its own config, data and cache directories, so none reads or writes ~;
code indexes (a session builds one on a thread) live under its tmp_path."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from codeloop.index.registry import forget_open_indexes
from codeloop.index.warmup import wait_for_warmups


@pytest.fixture(autouse=True)
def _private_home_dirs(tmp_path_factory: pytest.TempPathFactory,
                       monkeypatch: pytest.MonkeyPatch) -> None:
    base = tmp_path_factory.mktemp("xdg")
    for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME"):
        path = Path(base) / var.lower()
        path.mkdir()
        monkeypatch.setenv(var, str(path))


@pytest.fixture(autouse=True)
def _no_embeddings_unless_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    """Sessions fuse embeddings when the extra is installed; loading the model costs seconds
    of CPU, so tests that want it set CODELOOP_EMBEDDINGS themselves."""
    monkeypatch.setenv("CODELOOP_EMBEDDINGS", "0")


@pytest.fixture(autouse=True)
def index_cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    cache = tmp_path / "index-cache"
    monkeypatch.setenv("CODELOOP_CACHE_DIR", str(cache))
    yield cache
    wait_for_warmups()
    forget_open_indexes()


@pytest.fixture(autouse=True)
def _no_database_url(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests choose their store themselves; an operator's PostgreSQL URL never leaks in."""
    monkeypatch.delenv("CODELOOP_DATABASE_URL", raising=False)


@pytest.fixture(scope="session")
def pg_server() -> Iterator[str]:
    """The admin URL of a throw-away PostgreSQL (or CODELOOP_TEST_DATABASE_URL's server);
    skips, saying why, when there is none."""
    from tests.pg import NoPostgres, postgres_server

    try:
        server = postgres_server()
        url = server.__enter__()
    except NoPostgres as exc:
        if os.environ.get("CODELOOP_REQUIRE_POSTGRES") == "1":  # CI: never skip silently
            pytest.fail(f"CODELOOP_REQUIRE_POSTGRES=1 but: {exc}")
        pytest.skip(f"no PostgreSQL for this test: {exc}")
    try:
        yield url
    finally:
        server.__exit__(None, None, None)


@pytest.fixture
def pg_url(pg_server: str) -> Iterator[str]:
    """A fresh, empty database on the test server."""
    from tests.pg import fresh_database

    with fresh_database(pg_server) as url:
        yield url
