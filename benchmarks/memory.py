"""Long-term memory benchmark: recall quality, cross-user isolation and recall latency.

    PYTHONPATH=src python benchmarks/memory.py [--queries N --seed 19] [--no-vectors]
        [--database-url postgresql://...|auto]

Builds a labelled set in a temporary store: 6 repositories and 3 users; each user has one
memory per topic on each repository (worded differently per user, with the repository's own
commands and paths), the team has shared memories per repository, and each user has
preferences that hold everywhere. A query is a task-like sentence a user might start a
session with; the memories that should come back are that user's memory on the topic (or the
team's, or the user's preference). Every query is run unless `--queries` samples. Recall
runs the path the session uses (store recall, then the token-budget fit) with k = 3.

precision@3: the share of what came back (at most 3) that was expected, 0 for an empty
answer (`precision_answered` leaves empty answers out); recall@3: the share of the expected memories in the top 3; a leak is any memory of
another user (other than a team memory of the same repository) in an answer. Timings are
the store's recall plus the fit, per query. The last line is one JSON object.

With `--database-url` (an admin URL of a PostgreSQL server, or `auto` for a throw-away
cluster on 127.0.0.1) the same set also runs on the PostgreSQL memory store, in a fresh
database: the JSON adds `pg_recall_p50_ms`, `pg_recall_p95_ms` and `pg_precision_at_3`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.pg import fresh_database, postgres_server

from codeloop.memory.records import NewMemory
from codeloop.memory.store import MemoryStore, SQLiteMemoryStore
from codeloop.memory.vectors import available
from codeloop.session.memory_recall import recall

USERS = ("alice", "bob", "carol")
REPOS: tuple[dict[str, str], ...] = (
    {"name": "shop-api", "test": "tox -e py311", "mig": "alembic revision --autogenerate",
     "migdir": "db/migrations", "fmt": "black", "log": "structlog", "http": "httpx",
     "cfg": "shop/settings.py", "models": "shop/domain", "ci": "GitHub Actions",
     "lock": "poetry.lock", "dep": "poetry add", "docs": "Sphinx", "build": "build/",
     "core": "shop/core"},
    {"name": "ledger", "test": "make check", "mig": "django-admin makemigrations",
     "migdir": "ledger/migrations", "fmt": "ruff format", "log": "the stdlib logging module",
     "http": "requests", "cfg": "ledger/conf.py", "models": "ledger/values",
     "ci": "GitLab CI", "lock": "requirements.lock", "dep": "pip-compile", "docs": "MkDocs",
     "build": "dist/", "core": "ledger/kernel"},
    {"name": "pixelforge", "test": "cargo test --workspace", "mig": "sqlx migrate add",
     "migdir": "migrations/", "fmt": "rustfmt", "log": "the tracing crate", "http": "reqwest",
     "cfg": "src/config.rs", "models": "src/model", "ci": "Buildkite", "lock": "Cargo.lock",
     "dep": "cargo add", "docs": "rustdoc", "build": "target/", "core": "crates/engine"},
    {"name": "tidewatch", "test": "npm run test:ci", "mig": "knex migrate:make",
     "migdir": "server/migrations", "fmt": "prettier", "log": "pino", "http": "undici",
     "cfg": "server/env.ts", "models": "server/entities", "ci": "CircleCI",
     "lock": "package-lock.json", "dep": "npm install --save-exact", "docs": "TypeDoc",
     "build": "dist/", "core": "server/core"},
    {"name": "orbit-cli", "test": "go test ./...", "mig": "goose create",
     "migdir": "internal/db/migrations", "fmt": "gofmt", "log": "slog", "http": "net/http",
     "cfg": "internal/config/config.go", "models": "internal/types", "ci": "Drone",
     "lock": "go.sum", "dep": "go get", "docs": "godoc", "build": "bin/",
     "core": "internal/engine"},
    {"name": "mlkit", "test": "nox -s tests", "mig": "alembic revision",
     "migdir": "mlkit/store/versions", "fmt": "black", "log": "loguru", "http": "aiohttp",
     "cfg": "mlkit/config.py", "models": "mlkit/schemas", "ci": "Jenkins",
     "lock": "uv.lock", "dep": "uv add", "docs": "Sphinx", "build": "_build/",
     "core": "mlkit/core"},
)

# Per topic: three wordings (one per user) and the queries that should recall it.
TOPICS: dict[str, tuple[tuple[str, str, str], tuple[str, ...]]] = {
    "tests": ((
        "Run the test suite with `{test}`; plain invocations skip the integration fixtures.",
        "Tests need `{test}`; the slow ones are marked and run in CI only.",
        "Before committing, `{test}` must pass, doctests included."), (
        "run the tests after fixing the parser bug",
        "which command runs the test suite here",
        "the unit tests fail locally with fixture errors")),
    "migrations": ((
        "Database migrations live in `{migdir}` and are made with `{mig}`; never edit an "
        "applied migration.",
        "Schema changes need a migration under `{migdir}` ({mig}), reviewed before merge.",
        "Make a migration with `{mig}` for every new database column."), (
        "add a column to the orders table in the database",
        "create a schema migration for the new field")),
    "format": ((
        "Code is formatted with {fmt}; CI rejects unformatted files.",
        "Run {fmt} before pushing: the lint job checks formatting.",
        "Formatting is {fmt} defaults; do not hand-align code."), (
        "the CI lint job failed on formatting",
        "format the code before pushing")),
    "logging": ((
        "Log with {log}, never print(); pass context as keyword fields.",
        "Use {log} for logging; print statements are rejected in review.",
        "Logging goes through {log} with structured fields, not string formatting."), (
        "replace the print statements in the payment handler with logging",
        "add logging to the sync job")),
    "http": ((
        "Outgoing HTTP calls use {http} with a 10 second timeout and retries.",
        "Call external services through {http}; always set a timeout.",
        "HTTP requests to other services use {http}, wrapped with the retry helper."), (
        "call the external exchange-rate service over HTTP",
        "add retries and a timeout to the HTTP requests")),
    "config": ((
        "Settings come from environment variables read in `{cfg}`; nothing hard-coded.",
        "Configuration is loaded once in `{cfg}` from the environment.",
        "New settings go in `{cfg}` with an environment variable and a default."), (
        "make the cache size a configurable setting",
        "where are settings and environment variables read")),
    "models": ((
        "Value objects are attrs classes in `{models}`, not dataclasses.",
        "Domain types live in `{models}`; keep them immutable.",
        "Put new entity and value types in `{models}`, frozen."), (
        "define a value object for the shipping address",
        "add a domain type for invoices")),
    "release": ((
        "Releases are cut by tagging `v*`; {ci} builds and publishes, never upload by hand.",
        "{ci} publishes a release when a version tag is pushed.",
        "To release, bump the version, tag it, and let {ci} publish."), (
        "publish a new release of the package",
        "how do we release version 2.1")),
    "deps": ((
        "Dependencies are pinned in `{lock}`; add one with `{dep}`, never install into the "
        "environment by hand.",
        "Add a dependency with `{dep}` so that `{lock}` stays in sync.",
        "Third-party packages go through `{dep}`; `{lock}` is committed."), (
        "add a YAML parsing library as a dependency",
        "install a new package for date handling")),
    "docs": ((
        "Public functions need docstrings; the documentation is built with {docs}.",
        "Docs are written for {docs}; every new endpoint gets a page.",
        "Documentation builds with {docs}; warnings fail the docs build."), (
        "document the new endpoint in the docs",
        "the documentation build shows warnings")),
    "clean": ((
        "Your user refused `rm -rf {build}` and said: it holds cached artefacts; use the "
        "clean target instead.",
        "Your user refused deleting `{build}` by hand and said: run the clean task.",
        "Your user refused wiping `{build}` and said: stale artefacts go with `make clean`."), (
        "clean up the old build artefacts",
        "remove stale build output before rebuilding")),
}
TEAM: dict[str, tuple[str, tuple[str, ...]]] = {
    "owners": ("The `{core}` package is owned by the platform team: changes there need "
               "their review.", ("refactor the core engine package",)),
    "flags": ("New behaviour ships behind a feature flag declared in `flags.yaml`.",
              ("put the new checkout behaviour behind a feature flag",)),
    "errors": ("Error codes are listed in `docs/errors.md`; add new codes there first.",
               ("add a new error code for expired cards",)),
}
PREFERENCES: dict[str, tuple[tuple[str, str, str], tuple[str, ...]]] = {
    "commits": (("I write commit messages in the imperative mood, under 72 characters.",
                 "Commit messages: a short summary line, then why, wrapped at 72.",
                 "Keep commit messages to one summary line naming the component."),
                ("write the commit message for this change",)),
    "comments": (("Comments explain why, not what; no commented-out code.",
                  "I like short comments in plain English above tricky code.",
                  "No comments restating the code; explain the reason instead."),
                 ("add comments to the tricky code",)),
    "branches": (("Branch names look like `feature/<ticket>-<slug>`.",
                  "Name branches `fix/<issue>` or `feat/<issue>`.",
                  "Branches are named after the ticket number only."),
                 ("create a branch for this ticket",)),
    "prs": (("Keep pull requests under 400 changed lines; split bigger work.",
             "One pull request per concern; mixed refactors get sent back.",
             "Pull requests need a test plan section in the description."),
            ("open a pull request for the refactor",)),
}


@dataclass(frozen=True)
class Query:
    user: str
    repo: str
    text: str
    expected: frozenset[str]


def populate(store: MemoryStore, root: Path) -> tuple[dict[tuple[str, str, str], str],
                                                             dict[str, Path]]:
    """Store every memory; returns id by (user, repo name or "", topic) and repo paths."""
    ids: dict[tuple[str, str, str], str] = {}
    paths = {r["name"]: root / r["name"] for r in REPOS}
    for repo in REPOS:
        path = str(paths[repo["name"]])
        for topic, (wordings, _) in TOPICS.items():
            for i, user in enumerate(USERS):
                kind = "correction" if topic == "clean" else "fact"
                source = "denial" if topic == "clean" else "remember"
                mem = store.add(NewMemory(user=user, kind=kind, scope="repo",  # type: ignore[arg-type]
                                          text=wordings[i].format(**repo), source=source,  # type: ignore[arg-type]
                                          repo=path))
                assert mem is not None
                ids[(user, repo["name"], topic)] = mem.id
        for topic, (text, _) in TEAM.items():
            mem = store.add(NewMemory(user="alice", kind="fact", scope="team",
                                      text=text.format(**repo), source="cli", repo=path))
            assert mem is not None
            ids[("team", repo["name"], topic)] = mem.id
    for topic, (wordings, _) in PREFERENCES.items():
        for i, user in enumerate(USERS):
            mem = store.add(NewMemory(user=user, kind="fact", scope="user", text=wordings[i],
                                      source="cli"))
            assert mem is not None
            ids[(user, "", topic)] = mem.id
    return ids, paths


def queries(ids: dict[tuple[str, str, str], str], paths: dict[str, Path], count: int,
            seed: int) -> list[Query]:
    """Every (user, repository, query text) with its expected ids; `count` of them, sampled."""
    every: list[Query] = []
    for user in USERS:
        for name, path in paths.items():
            for topic, (_, texts) in TOPICS.items():
                every += [Query(user, str(path), t, frozenset({ids[(user, name, topic)]}))
                          for t in texts]
            for topic, (_, texts) in TEAM.items():
                every += [Query(user, str(path), t, frozenset({ids[("team", name, topic)]}))
                          for t in texts]
            for topic, (_, texts) in PREFERENCES.items():
                every += [Query(user, str(path), t, frozenset({ids[(user, "", topic)]}))
                          for t in texts]
    if count <= 0 or count >= len(every):
        return every
    return random.Random(seed).sample(every, count)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def sqlite_store(root: Path, use_vectors: bool) -> MemoryStore:
    return SQLiteMemoryStore(root / "data" / "memory.sqlite", use_vectors=use_vectors)


def run(use_vectors: bool, count: int, seed: int,
        open_store: Callable[[Path, bool], MemoryStore] = sqlite_store) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        store = open_store(root, use_vectors)
        ids, paths = populate(store, root)
        owner = {mid: key[0] for key, mid in ids.items()}
        repo_of = {mid: str(paths[key[1]]) if key[1] else "" for key, mid in ids.items()}
        qs = queries(ids, paths, count, seed)
        recall(store, "alice", qs[0].repo, "warm up", 3, 1_000)  # loads the model once
        precisions, recalls, times, sizes = [], [], [], []
        leaks = misses = 0
        for q in qs:
            start = time.perf_counter()
            found = recall(store, q.user, q.repo, q.text, 3, 1_000)
            times.append((time.perf_counter() - start) * 1000)
            got = found.ids
            sizes.append(len(got))
            leaks += sum(1 for m in got if owner[m] != q.user
                         and not (owner[m] == "team" and repo_of[m] == q.repo))
            hits = len(set(got) & q.expected)
            precisions.append(hits / len(got) if got else 0.0)
            recalls.append(hits / min(3, len(q.expected)))
            misses += not hits
        answered = [p for p, n in zip(precisions, sizes, strict=True) if n]
        return {"precision_at_3": round(statistics.mean(precisions), 3),
                "precision_answered": round(statistics.mean(answered), 3),
                "recall_at_3": round(statistics.mean(recalls), 3),
                "cross_user_leaks": leaks, "recall_p50_ms": round(percentile(times, 0.5), 2),
                "recall_p95_ms": round(percentile(times, 0.95), 2), "queries": len(qs),
                "memories": len(ids), "repos": len(REPOS), "users": len(USERS),
                "queries_without_hit": misses, "vectors": use_vectors}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=0, help="sample this many (default: all)")
    parser.add_argument("--seed", type=int, default=19)
    parser.add_argument("--no-vectors", action="store_true",
                        help="BM25 only, even when the embeddings extra is installed")
    parser.add_argument("--database-url", default="",
                        help="also run on PostgreSQL: an admin URL of a server, or `auto`")
    args = parser.parse_args()
    modes = [False] if args.no_vectors or not available() else [True, False]
    results = [run(mode, args.queries, args.seed) for mode in modes]
    pg = on_postgres(args.database_url, modes[0], args.queries, args.seed) \
        if args.database_url else None
    for r in results:
        print(f"{'BM25 + embeddings' if r['vectors'] else 'BM25 only':>18}: "
              f"precision@3 {r['precision_at_3']:.3f}  recall@3 {r['recall_at_3']:.3f}  "
              f"leaks {r['cross_user_leaks']}  p50 {r['recall_p50_ms']:.2f} ms  "
              f"p95 {r['recall_p95_ms']:.2f} ms  ({r['queries']} queries, "
              f"{r['memories']} memories, {r['queries_without_hit']} without a hit)",
              file=sys.stderr)
    main_result = dict(results[0])
    if len(results) > 1:
        main_result["bm25_only"] = {k: results[1][k] for k in (
            "precision_at_3", "recall_at_3", "cross_user_leaks", "recall_p95_ms")}
    if pg is not None:
        print(f"{'PostgreSQL':>18}: precision@3 {pg['precision_at_3']:.3f}  "
              f"leaks {pg['cross_user_leaks']}  p50 {pg['recall_p50_ms']:.2f} ms  "
              f"p95 {pg['recall_p95_ms']:.2f} ms", file=sys.stderr)
        main_result.update({"pg_precision_at_3": pg["precision_at_3"],
                            "pg_cross_user_leaks": pg["cross_user_leaks"],
                            "pg_recall_p50_ms": pg["recall_p50_ms"],
                            "pg_recall_p95_ms": pg["recall_p95_ms"]})
    print(json.dumps(main_result))


def on_postgres(admin_url: str, use_vectors: bool, count: int, seed: int) -> dict[str, object]:
    """The same run on the PostgreSQL store, in a fresh database on the server."""
    from codeloop.memory.store_pg import PostgresMemoryStore

    with contextlib.ExitStack() as stack:
        admin = (stack.enter_context(postgres_server(durable=True)) if admin_url == "auto"
                 else admin_url)
        url = stack.enter_context(fresh_database(admin))
        opened: list[PostgresMemoryStore] = []

        def open_pg(_root: Path, vectors: bool) -> MemoryStore:
            opened.append(PostgresMemoryStore(url, use_vectors=vectors))
            return opened[-1]

        try:
            return run(use_vectors, count, seed, open_pg)
        finally:
            for store in opened:
                store.close()


if __name__ == "__main__":
    main()
