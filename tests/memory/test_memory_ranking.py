"""Recall's ranking (`memory.ranking`) on a real SQLite store: a runner-up close in BM25 on
one rare word, but holding fewer of the query's words than the best hit, is left out."""

from __future__ import annotations

from pathlib import Path

from codeloop.memory.ranking import Candidate, matched, query_terms, rank, same_word
from codeloop.memory.records import NewMemory
from codeloop.memory.store import SQLiteMemoryStore


def _store(tmp: Path) -> SQLiteMemoryStore:
    return SQLiteMemoryStore(tmp / "data" / "memory.sqlite", use_vectors=False)


def _add(store: SQLiteMemoryStore, text: str) -> str:
    memory = store.add(NewMemory(user="alice", kind="fact", scope="repo", text=text,
                                 source="cli", repo="/r/one"))
    assert memory is not None
    return memory.id


def test_a_runner_up_holding_fewer_of_the_query_words_is_left_out(tmp_path: Path) -> None:
    store = _store(tmp_path)
    suite = _add(store, "Run the test suite with make check; the integration fixtures need "
                        "Postgres.")
    _add(store, "Error codes are listed in docs/errors.md.")
    for text in ("Releases are tagged by CI.", "Formatting is black.", "Logging uses structlog."):
        _add(store, text)
    # BM25 puts the error-code note close to the suite note (one rare word, "errors"),
    # but it holds one of the query's words where the suite note holds two.
    hits = store.recall("alice", "/r/one", "the unit tests fail with fixture errors", 3)
    assert [h.memory.id for h in hits] == [suite]


def test_close_runners_up_holding_as_many_words_stay(tmp_path: Path) -> None:
    store = _store(tmp_path)
    memories = [store.get(_add(store, text), "alice") for text in (
        "Error codes are listed in the errors page.",
        "The test suite runs with tox.",
        "Codes of errors in tests go to the fixtures page.")]
    query = "error codes for the test suite"
    found = rank(query, [Candidate(m, bm25, 0.0, True)
                         for m, bm25 in zip(memories, (5.0, 4.5, 4.9), strict=True)], 3,
                 use_vectors=False)
    # Each holds two of the query's words; all three are within the cutoff of the best.
    assert [h.memory.id for h in found] == [memories[0].id, memories[2].id, memories[1].id]
    fewer = rank("error codes for the test suite runner", [
        Candidate(memories[0], 5.0, 0.0, True),
        Candidate(store.get(_add(store, "The runner is pinned."), "alice"), 4.9, 0.0, True)],
        3, use_vectors=False)
    assert [h.memory.text for h in fewer] == [memories[0].text]
    # Two shared words keep a runner-up even when the best holds three: a denial's reason
    # is not pushed out by a past session's summary that shares more of the task's words.
    reason = store.get(_add(store, "Never pip install requests here."), "alice")
    episode = store.get(_add(store, "A session on the HTTP client with requests ended."),
                        "alice")
    kept = rank("add retries to the HTTP client; install requests if missing",
                [Candidate(episode, 5.0, 0.0, True), Candidate(reason, 4.0, 0.0, True)], 3,
                use_vectors=False)
    assert [h.memory.id for h in kept] == [episode.id, reason.id]


def test_forms_of_a_word_count_once_and_unrelated_words_do_not() -> None:
    assert same_word("dependency", "dependencies") and same_word("tests", "test")
    assert same_word("format", "formatting") and same_word("fixture", "fixtures")
    assert not same_word("log", "logo") and not same_word("release", "relevant")
    assert not same_word("config", "configurationally")
    query = query_terms("add a YAML parsing library as a dependency")
    assert query == ["yaml", "parsing", "library", "dependency"]
    assert matched(query, "Dependencies are pinned; add a library with `uv add`.") == 2
