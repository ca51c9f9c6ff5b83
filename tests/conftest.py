"""Every test gets its own config, data and cache directories, so none reads or writes ~;
code indexes (a session builds one on a thread) live under its tmp_path. Under pytest-xdist
(`-n N --dist loadgroup`) tests that share a costly fixture stay on one worker."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from codeloop.index.registry import forget_open_indexes
from codeloop.index.warmup import wait_for_warmups

# Tests using these fixtures form one xdist group, run by a single worker one after another:
# two local Ray clusters at once would compete for the machine's two cores and Ray's ports.
SHARED_GROUPS = {"ray_cluster": "ray"}


@pytest.hookimpl(tryfirst=True)  # before xdist's worker reads the marks into node ids
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Put each test in its xdist group (used by `--dist loadgroup`, ignored otherwise)."""
    for item in items:
        if item.get_closest_marker("xdist_group") is None and (group := _xdist_group(item)):
            item.add_marker(pytest.mark.xdist_group(group))


def _xdist_group(item: pytest.Item) -> str | None:
    """"ray" for a Ray test; the module's path when the test uses a module-scoped fixture
    (built once per worker that runs the module, so its tests stay together); else None."""
    names = getattr(item, "fixturenames", ())
    for fixture, group in SHARED_GROUPS.items():
        if fixture in names:
            return group
    info = getattr(item, "_fixtureinfo", None)
    defs = info.name2fixturedefs.values() if info is not None else ()
    if any(chain and chain[-1].scope in ("module", "class") for chain in defs):
        return item.nodeid.split("::")[0]
    return None


@pytest.fixture(scope="session", autouse=True)
def _bytecode_kept(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The Python processes tests start (`codeloop` in a terminal, session drivers) keep their
    bytecode under this run's temp directory, never beside the sources. With
    PYTHONDONTWRITEBYTECODE set, as where the suite runs, each of them compiled every codeloop
    module again: about 0.3 s of CPU a start, over a thousand starts."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PYTHONPYCACHEPREFIX", str(tmp_path_factory.mktemp("pycache")))
        patch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)
        yield


@pytest.fixture(autouse=True)
def _private_home_dirs(tmp_path_factory: pytest.TempPathFactory,
                       monkeypatch: pytest.MonkeyPatch) -> None:
    base = tmp_path_factory.mktemp("xdg")
    for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME"):
        path = Path(base) / var.lower()
        path.mkdir()
        monkeypatch.setenv(var, str(path))


@pytest.fixture(scope="session", autouse=True)
def _no_embeddings_unless_asked() -> Iterator[None]:
    """Sessions fuse embeddings when the extra is installed; loading the model costs seconds
    of CPU, so tests that want it set CODELOOP_EMBEDDINGS themselves. Set for the whole run,
    so processes that module-scoped fixtures start (Ray nodes, servers) have it too."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CODELOOP_EMBEDDINGS", "0")
        yield


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


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Name every security case this machine could not exercise, even without -rs (here, not
    in tests/security/conftest.py: the xdist controller loads only this conftest)."""
    skipped = [
        rep
        for rep in terminalreporter.stats.get("skipped", [])
        if "tests/security/" in str(getattr(rep, "nodeid", ""))
    ]
    if skipped:
        terminalreporter.write_sep("-", "security cases NOT exercised on this machine")
        for rep in skipped:
            reason = rep.longrepr[2] if isinstance(rep.longrepr, tuple) else str(rep.longrepr)
            terminalreporter.write_line(f"{rep.nodeid}: {reason}")
