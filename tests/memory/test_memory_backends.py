"""Both memory stores hold the same memories: recall gives the same memories in the same
order with the same scores, whatever the query (stems shared by several words, repeated
words, words in most memories, words in none)."""

from __future__ import annotations

import itertools
import time
from pathlib import Path

import pytest

from codeloop.memory.records import NewMemory
from codeloop.memory.stems import stems
from codeloop.memory.store import MemoryStore, RankedRecall, SQLiteMemoryStore

REPOS = ("/r/shop", "/r/ledger")
TEXTS = (
    "tests run with tox -e py311; run them before every commit",
    "the test runner is pytest with xdist: running tests takes two minutes",
    "we use attrs, not dataclasses, for value objects in shop/domain",
    "migrations live in db/migrations and are made by alembic revision --autogenerate",
    "never pip install here; use the vendored copy under third_party/requests",
    "format with black; the CI runs black --check on every push",
    "the HTTP client is httpx with retries configured in shop/http_client.py",
    "logging goes through structlog; never print from library code",
    "the cache is rebuilt nightly by the cron job in ops/cron/rebuild_cache.sh",
    "release notes are written in docs/changes.rst before tagging a release",
    "configuration is read from shop/settings.py and environment variables",
    "the ledger kernel must never import from the web layer",
    "a failing flaky test in test_checkout retries three times in CI",
    "getHTTPResponse_code is deprecated; call response_status instead",
)
QUERIES = (
    "how do I run the tests", "run tests", "add a database migration", "install requests",
    "format the code", "retry HTTP calls", "logging", "where is the configuration",
    "release", "flaky test in checkout", "the", "getHTTPResponse_code", "response status",
    "value objects dataclasses attrs", "nothing matches zzqx", "tests tests tests",
    "running runner runs", "cache rebuilt nightly cron",
)


def _fill(store: MemoryStore) -> None:
    users = itertools.cycle(("alice", "bob"))
    scopes = itertools.cycle(("repo", "repo", "team", "user"))
    for n, (text, user, scope) in enumerate(zip(TEXTS * 2, users, scopes, strict=False)):
        store.add(NewMemory(user=user, kind="fact", scope=scope,  # type: ignore[arg-type]
                            text=text, source="cli", repo=REPOS[n % 2]))


CASES = [(q, user, repo) for q in QUERIES for user in ("alice", "bob", "carol")
         for repo in REPOS]


def _answers(store: MemoryStore) -> list[list[tuple[str, float]]]:
    return [[(h.memory.text, round(h.score, 9)) for h in store.recall(user, repo, q, 8)]
            for q, user, repo in CASES]


def _bm25(store: RankedRecall) -> list[dict[tuple[str, str], float]]:
    """The raw lexical scores (before recall normalises them), by memory owner and text."""
    out = []
    for q, user, repo in CASES:
        scores = store._lexical(q, {"user": user, "repo": repo, "now": time.time()}, 100)
        rows = store._rows(scores)
        out.append({(rows[n].user, rows[n].text): s for n, s in scores.items()})
    return out


def test_postgres_recalls_what_sqlite_recalls_in_the_same_order(tmp_path: Path,
                                                                 pg_url: str) -> None:
    from codeloop.memory.store_pg import PostgresMemoryStore

    lite = SQLiteMemoryStore(tmp_path / "memory.sqlite", use_vectors=False)
    pg = PostgresMemoryStore(pg_url, use_vectors=False)
    try:
        _fill(lite)
        _fill(pg)
        expected = _answers(lite)
        assert sum(map(len, expected)) > 50  # the queries find things
        assert _answers(pg) == expected
        lexical = _bm25(lite)
        assert sum(map(len, lexical)) > 50
        assert _bm25(pg) == [pytest.approx(scores, rel=1e-9) for scores in lexical]
    finally:
        pg.close()


@pytest.mark.parametrize(("text", "expected"), [
    ("running runs runner", ["run", "run", "runner"]),
    ("getHTTPResponse_code", ["gethttpresponse_cod"]),  # lower-cased, then stemmed
    ("", []),
])
def test_stems_are_fts5s(text: str, expected: list[str]) -> None:
    assert stems(text.split()) == expected
