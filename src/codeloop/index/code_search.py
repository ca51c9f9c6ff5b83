"""`search_code`'s ranking: the localisation ranker's signals applied to a model's query.

A model writes short queries ("parse duration string", `ModelAdmin.get_urls`) and then reads
files, not chunks. So the answer is one result per file, in the fused order of every signal
`rank.signals` gives (BM25 over files and chunks, names the query mentions, the reference
graph, paths, commit history, embeddings when on), each with its best chunk and the file's
other matching chunks folded into line ranges. Tests, docs and prose rank below source
unless the query asks for them or names a path glob.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Literal

from codeloop.index import embeddings
from codeloop.index.focus import code_like, code_words
from codeloop.index.hits import ChunkHit
from codeloop.index.pointers import path_stem
from codeloop.index.rank import (
    LEXICAL_DEPTH,
    TEST_PRIOR,
    WEIGHTS,
    fuse,
    fuse_semantic,
    is_packaging_path,
    is_test_path,
    prior,
    query_prior,
    signals,
)
from codeloop.index.service import RepoIndex
from codeloop.index.terms import query_terms

# Source, when the query asks for tests or docs (rank.TEST_PRIOR: the same step down).
UNASKED_PRIOR = TEST_PRIOR
FOLDED = 4  # other chunks of a file listed by line range; more are counted
# A path glob in a query: a word with `*` and a `/` or `.` (`tests/*.py`, `*.rst`), not
# markdown's `**bold**`.
_GLOB_WORD = re.compile(r"(?:^|\s)((?=[\w.*/-]*[./])(?=[\w.*/-]*\w)[\w./-]*\*[\w./*-]*)(?=\s|$)")
# Markdown bold closed after a full stop or opened before a word ("**Please describe.**"):
# a glob's `**` stands for folders, so it touches a `/` or an end of the word alone.
_BOLD_EDGE = re.compile(r"[^/]\*\*$|^\*\*[^/]")
# Words that ask for tests or docs. Not a repository's own name (`pytest`, `sphinx`): in
# those repositories every other query says it.
_TEST_WORDS = frozenset({"test", "tests", "testing", "fixture", "fixtures", "conftest"})
_DOC_WORDS = frozenset({"doc", "docs", "documentation", "readme", "changelog", "rst",
                        "tutorial", "example", "examples"})
_ASKING_WORDS = _TEST_WORDS | _DOC_WORDS
# A longer query is a sentence about the code ("I tested it with…", "the docs say…"):
# there such words do not ask for test or doc files (measured on benchmarks/search_quality.py).
ASKING_MAX_WORDS = 8
_QUERY_WORD = re.compile(r"[A-Za-z]+")
# A name in a query, dots and dashes splitting it (`pytest.raises`, `--fixtures`).
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
_MATCHING_SIGNALS = ("files", "chunks", "mentions", "paths")
_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")
_ATTEMPTS = 3
# Where a repository has a name (`intent_of`): in source, only in tests or docs, or not.
Found = Literal["source", "elsewhere"] | None
# The localisation ranker's weights (`rank.WEIGHTS`, tuned on issue texts): weights tuned on
# search_quality.py's queries did no better held out (leave-one-repository-out).
QUERY_WEIGHTS = dict(WEIGHTS)


@dataclass(frozen=True)
class FileResult:
    """One file of the answer: its best chunk (None when the file ranks by its name, links
    or history rather than its text) and its other matching chunks, text-less."""

    path: str
    score: float
    best: ChunkHit | None
    others: tuple[ChunkHit, ...] = ()


@dataclass
class Intent:
    """What the query asks for beyond its words: tests, docs, or only paths like a glob."""

    tests: bool = False
    docs: bool = False
    glob: str | None = None

    def prior(self) -> Callable[[str], float]:
        """`rank.prior`, turned round for the kinds of file the query asks for: those rank
        first, and source takes the place of what was not asked for."""
        if self.glob is not None:
            return lambda _path: 1.0
        if not (self.tests or self.docs):
            return query_prior

        def adjusted(path: str) -> float:
            base = prior(path)
            if base == 1.0:
                return UNASKED_PRIOR
            if is_packaging_path(path):
                return base
            if is_test_path(path):
                return 1.0 if self.tests else base
            return 1.0 if self.docs else base
        return adjusted

    def admits(self, path: str) -> bool:
        if self.glob is None:
            return True
        return (fnmatch.fnmatch(path, self.glob)
                or fnmatch.fnmatch(path.rpartition("/")[2], self.glob))


@dataclass
class CodeSearch:
    """The answer to one query, and what was tried (for an empty answer's message)."""

    query: str
    intent: Intent
    terms: tuple[str, ...]
    results: list[FileResult] = field(default_factory=list)
    candidates: int = 0  # files any signal found, before the glob
    semantic: bool = False
    # Embeddings are on but this repository's are still being computed in the background.
    semantic_pending: bool = False
    # Embeddings are on but the model could not be loaded (`embeddings.load_failed`).
    semantic_broken: bool = False

    def tried(self) -> str:
        """One paragraph saying what the search did, for a model deciding what to try next."""
        if not self.terms:
            return ("The query has no searchable words: every word is a common English or "
                    "keyword stopword or shorter than two characters.")
        signals_used = ("BM25 over functions, classes and whole files, defined names, file "
                        "paths, the import graph and commit messages")
        if self.semantic:
            signals_used += ", and embeddings"
        elif self.semantic_pending:
            signals_used += " (the repository's embeddings are still being computed)"
        elif self.semantic_broken:
            signals_used += " (not embeddings: the embedding model could not be loaded)"
        said = f"Searched for the terms {', '.join(self.terms[:12])} with {signals_used}."
        if self.intent.glob is not None:
            said += (f" Only paths matching {self.intent.glob!r} were kept; "
                     f"{self.candidates} files matched without that filter.")
        return said


def intent_of(query: str, glob: str | None = None,
              lookup: Callable[[str], Found] | None = None) -> Intent:
    """Tests or docs are asked for when the query says so; a glob (given, or a path-like
    word with `*` in the query) keeps only matching paths and drops the priors. With
    `lookup` (where the repository defines or names a word) an identifier asks only when it
    means tests or docs there: `fixture`, a function of pytest's source, does not, nor
    `test_path_error`, a test of the reporter's that the repository does not have."""
    asked: set[str] = set()
    if len(query.split()) <= ASKING_MAX_WORDS:
        for token in dict.fromkeys(_IDENTIFIER.findall(query)):  # each name looked up once
            parts = {w.lower() for w in _QUERY_WORD.findall(token)}
            asking = parts & _ASKING_WORDS
            if asking - asked and (lookup is None or _asks(token, lookup(token))):
                asked |= asking
    if glob is None:
        glob = next((m.group(1) for m in _GLOB_WORD.finditer(query)
                     if not _BOLD_EDGE.search(m.group(1))), None)
    return Intent(tests=bool(asked & _TEST_WORDS), docs=bool(asked & _DOC_WORDS), glob=glob)


def _asks(token: str, found: Found) -> bool:
    """Whether an identifier holding an asking word asks for tests or docs: the word itself
    unless it is source code here, a longer name (`test_cse`) when the repository has it."""
    if token.lower() in _ASKING_WORDS:
        return found != "source"
    return found is not None


def search_code(index: RepoIndex, query: str, limit: int = 5,
                glob: str | None = None) -> CodeSearch:
    """The `limit` files that best answer `query`, best first, one result per file."""
    answer = CodeSearch(query, intent_of(query, glob, lambda word: _found(index, word)),
                        query_terms(query))
    if not answer.terms:
        return answer
    for _attempt in range(_ATTEMPTS):
        stale = _rank(index, answer, limit)
        if not stale:
            return answer
        # A shown file changed since it was indexed: re-index it and rank again.
        index.notify_changed(stale)
    return answer


def _found(index: RepoIndex, word: str) -> Found:
    """Where the repository defines `word` or has a file of that name: "source" when a
    source file does (not a test, doc or prose file), "elsewhere" when only others do."""
    files = index.files_defining([word]).get(word, [])
    if any(prior(path) == 1.0 for path in files):
        return "source"
    stems = index.memo("file_stems_kind", lambda: _file_stems(index.paths()))
    kind = stems.get(word.lower())
    return kind if kind is not None else ("elsewhere" if files else None)


def _file_stems(paths: list[str]) -> dict[str, Found]:
    """Each lower-cased file or package name (`fixtures` of `_pytest/fixtures.py`): "source"
    when some source file has it (`rank.prior` 1), else "elsewhere"."""
    stems: dict[str, Found] = {}
    for path in paths:
        stem = path_stem(path).lower()
        if stems.get(stem) != "source":
            stems[stem] = "source" if prior(path) == 1.0 else "elsewhere"
    return stems


def _rank(index: RepoIndex, answer: CodeSearch, limit: int) -> list[str]:
    """Fill `answer.results`; returns the files found stale instead (then nothing is kept).
    Only the files shown are read and hash-checked, not every file a chunk matched in."""
    answer.results = []
    hits = index.search(answer.query, LEXICAL_DEPTH, verify=False)
    by_path: dict[str, list[ChunkHit]] = {}
    for hit in hits:
        by_path.setdefault(hit.path, []).append(hit)
    found = signals(index, answer.query, chunk_hits=hits)
    # The graph and history lists rank files for any text at all: without a match of the
    # query's words in some file's text, name or path there is nothing to answer.
    if not any(found.lists.get(name) for name in _MATCHING_SIGNALS):
        return []
    priors = answer.intent.prior()
    ranked = fuse(found, LEXICAL_DEPTH, weights=QUERY_WEIGHTS, priors=priors)
    if embeddings.enabled():
        # Never waits: a repository's first embedding takes minutes on a large one.
        try:
            found_semantic = embeddings.rank_files_semantic_ready(index, answer.query,
                                                                  LEXICAL_DEPTH)
            answer.semantic_pending = found_semantic is None
        except embeddings.EmbeddingsUnavailable:
            found_semantic, answer.semantic_broken = None, True
        if found_semantic is not None:
            answer.semantic = True
            ranked = fuse_semantic(ranked, [p for p, _ in found_semantic], LEXICAL_DEPTH,
                                   priors=priors)
    answer.candidates = len(ranked)
    named = named_definitions(answer.query)
    stale: list[str] = []
    for path, score in ranked:
        if not answer.intent.admits(path):
            continue
        lines = index.fresh_lines(path)
        if lines is None:
            stale.append(path)
            continue
        chunks = by_path.get(path, [])
        top = _named_chunk(index, path, chunks, named) if named else None
        if top is None and chunks:
            top = chunks[0]
        best = None if top is None else replace(
            top, text="\n".join(lines[top.start_line - 1:top.end_line]))
        answer.results.append(FileResult(path, score, best, tuple(c for c in chunks
                                                                  if c is not top)))
        if len(answer.results) == limit:
            break
    if stale:
        answer.results = []
    return stale


def named_definitions(query: str) -> list[tuple[str | None, str]]:
    """(class or None, name) of each definition the query writes as code: `Class.method`,
    `snake_case`, `CamelCase`, a call; each file's result then shows that definition."""
    as_code = code_words(query)
    named: list[tuple[str | None, str]] = []
    for token in _DOTTED.findall(query):
        parts = token.split(".")
        if len(parts) > 1 or code_like(parts[-1]) or parts[-1] in as_code:
            named.append((parts[-2] if len(parts) > 1 else None, parts[-1]))
    return named


def _named_chunk(index: RepoIndex, path: str, chunks: list[ChunkHit],
                 named: list[tuple[str | None, str]]) -> ChunkHit | None:
    """The matching chunk, else the definition, of a name the query gives (its class's
    first), or None when the file defines none of them."""
    def rank(parent: str | None, name: str, wanted: tuple[str | None, str]) -> int | None:
        if name != wanted[1]:
            return None
        return 0 if wanted[0] is None or parent == wanted[0] else 1

    best: tuple[int, int, ChunkHit] | None = None
    for order, wanted in enumerate(named):
        for chunk in chunks:
            *owners, name = chunk.symbol.split(".")
            level = rank(owners[-1] if owners else None, name, wanted)
            if level is not None and (best is None or (level, order) < best[:2]):
                best = (level, order, chunk)
    if best is not None and best[0] == 0:
        return best[2]
    definitions = index.definitions_in([path]).get(path, [])
    for order, wanted in enumerate(named):
        for hit in definitions:
            level = rank(hit.parent, hit.name, wanted)
            if level is not None and (best is None or (level, order) < best[:2]):
                symbol = f"{hit.parent}.{hit.name}" if hit.parent else hit.name
                best = (level, order, ChunkHit(path, hit.start_line, hit.end_line, symbol,
                                               0.0, ""))
    return None if best is None else best[2]
