"""Rank the files of a repository for a piece of text (a task, an issue, a focus).

Eleven signals, fused by weighted reciprocal rank: BM25 over whole files, BM25 over chunks
(best chunk per file), files the text names or that define identifiers it names, PageRank
over the reference graph personalised to those files, path components the text names, the
files that past commits with messages like the text's title changed, the precise pointers
of `pointers` (traceback frames, dotted module paths, `Class.method` pairs and the files
defining their classes), and the files the title alone finds by its words. A
test file that ranks high passes a share of its score to the module it tests. The head of
the fused ranking is then reordered by the learnt models of `rerank`.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache

from codeloop.index import embeddings
from codeloop.index.focus import Focus, focus_of, path_term_files, without_reports
from codeloop.index.history import title_of
from codeloop.index.hits import ChunkHit
from codeloop.index.languages import PROSE_LANGUAGES, detect_language
from codeloop.index.pagerank import pagerank
from codeloop.index.pointers import (
    class_files,
    class_pairs,
    frame_files,
    method_files,
    module_files,
    tested_sources,
)
from codeloop.index.rerank import RERANK_DEPTH, rerank
from codeloop.index.service import RepoIndex

RRF_K = 20.0
LEXICAL_DEPTH = 200

# `classes` (session 18): on the localisation benchmark's recorded lists recall@5 +0.006 on
# both halves, recall@1 +0.009; no change on search_quality.py's queries.
# `title` (session 21): on the recorded lists of all 347 instances recall@5 0.784 -> 0.809
# (tune 0.780 -> 0.809, held out 0.787 -> 0.810; weight and depth chosen on tune).
WEIGHTS = {"files": 0.5, "chunks": 1.0, "mentions": 0.5, "pagerank": 0.5, "paths": 1.0,
           "history": 2.0, "frames": 2.0, "modules": 0.5, "methods": 0.5, "classes": 1.0,
           "title": 1.0}
# A test file among the first TESTED_DEPTH passes this share of its score (before priors)
# to the module it tests: an issue quoting a failing test points at that module's code.
TESTED_SHARE = 0.25
TESTED_DEPTH = 10
# An issue's title searched alone, as a model's query is (`title_files`, `query_prior`): in
# a long issue the body's words (examples, output, the reporter's own names) outweigh the
# title's in every list; its first TITLE_DEPTH files form one more list.
TITLE_DEPTH = 20
# Reciprocal rank keeps only the order of a list; a file whose BM25 score stands far above
# the rest also gets a share of its score relative to the best (on the localisation
# benchmark this lifted recall@1 by 0.03 without costing recall@5).
SCORE_WEIGHTS = {"files": 0.01, "chunks": 0.02}
# Where a fix usually lands: source over tests, code over prose, examples, packaging and
# config.
_TEST_PATH = re.compile(r"(^|/)(tests?|testing)/|(^|/)test_[^/]*$|_tests?\.[a-z]+$|conftest\.py$")
_DOCS_PATH = re.compile(r"(^|/)(docs?|examples?|benchmarks?|asv_bench)/")
# Packaging and version metadata: on the localisation benchmark `setup.py` and
# `__pkginfo__.py` took top-5 places for issues that name the package (recall@5 +0.012 on
# the 83-instance sample, no change on the instances after it, recall@1 and MRR unchanged).
_PACKAGING_PATH = re.compile(r"(^|/)(setup\.py|__pkginfo__\.py|_?version\.py)$")
TEST_PRIOR = 0.6
# Tests below source for a query: a step lower than for a task's text, since a model that
# wants tests says so (search_quality.py: hit@5 +0.01 over 0.6).
QUERY_TEST_PRIOR = 0.45
PROSE_PRIOR = 0.3
DOCS_PRIOR = 0.5
PACKAGING_PRIOR = 0.5


def is_test_path(path: str) -> bool:
    return _TEST_PATH.search(path) is not None


def is_packaging_path(path: str) -> bool:
    return _PACKAGING_PATH.search(path) is not None


@lru_cache(maxsize=65_536)
def prior(path: str) -> float:
    """How likely a file is to be the one to change, before reading the text."""
    if detect_language(path) in PROSE_LANGUAGES:
        return PROSE_PRIOR
    if _TEST_PATH.search(path):
        return TEST_PRIOR
    if _PACKAGING_PATH.search(path):
        return PACKAGING_PRIOR
    return DOCS_PRIOR if _DOCS_PATH.search(path) else 1.0


def query_prior(path: str) -> float:
    """`prior` for a short query (a model's, or a title): tests at QUERY_TEST_PRIOR."""
    return QUERY_TEST_PRIOR if is_test_path(path) else prior(path)


@dataclass
class Signals:
    """The ranked lists one text gives, before fusion, the BM25 scores of two of them, and
    the modules that the listed test files test."""

    lists: dict[str, list[str]]
    scores: dict[str, dict[str, float]]
    tested: dict[str, list[str]] = field(default_factory=dict)


def rank_files(index: RepoIndex, text: str, limit: int = 50, focus: Focus | None = None,
               chunk_hits: list[ChunkHit] | None = None,
               titled: bool = True) -> list[tuple[str, float]]:
    """The files most relevant to `text`, best first, with fused scores. `chunk_hits` are
    the caller's `index.search(text, LEXICAL_DEPTH, verify=False)` if it has them;
    `titled`: whether the text's first line is a title (`signals`)."""
    return order(signals(index, text, focus, chunk_hits, titled), limit)


def order(found: Signals, limit: int = 50) -> list[tuple[str, float]]:
    """`found` fused, its head reordered by the learnt model: the ranking of an issue text."""
    return rerank(fuse(found, max(limit, RERANK_DEPTH)), found, is_test_path)[:limit]


def signals(index: RepoIndex, text: str, focus: Focus | None = None,
            chunk_hits: list[ChunkHit] | None = None, titled: bool = True) -> Signals:
    """Every ranked list `rank_files` fuses (see the module docstring). A text that is not
    a task or an issue (a session's per-turn focus: paths and names) is not `titled`: its
    first line gets no list of its own."""
    text = without_reports(text)
    focus = focus if focus is not None else focus_of(index, text)
    matching, scores = _matching_lists(index, text, focus, chunk_hits)
    # In the order the weights were tuned in (float sums, so ties stay as they were).
    lists = {name: matching[name] for name in ("files", "chunks", "mentions")}
    graph = index.graph()
    personal = dict(focus.files)
    for i, p in enumerate(lists["files"][:20]):
        personal[p] = personal.get(p, 0.0) + 1.0 / (i + 5)
    ranks = pagerank(graph, personal, focus.identifiers)
    order = ranks.argsort()[::-1][:LEXICAL_DEPTH]
    lists["pagerank"] = [graph.paths[i] for i in order if ranks[i] > 0]
    lists["paths"] = matching["paths"]
    # The title, not the whole text: commit subjects are short, and an issue's body (code,
    # output) matched unrelated commits on the benchmark.
    votes = index.commit_search().files_for(title_of(text))
    present = index.memo("path_set", lambda: frozenset(index.paths()))
    lists["history"] = sorted((p for p in votes if p in present), key=lambda p: (-votes[p], p))
    lists["frames"] = frame_files(index, text)
    lists["modules"] = module_files(index, text)
    pairs = class_pairs(index, text)  # worked out once for both lists
    lists["methods"] = method_files(index, text, pairs)
    lists["classes"] = class_files(index, text, pairs)
    # Any list's head can put a test file in the fused head: map those test files (the
    # title's list ranks tests low and was measured without them).
    tests = {p for ranked in lists.values() for p in ranked[:2 * TESTED_DEPTH] if is_test_path(p)}
    tested = tested_sources(index, sorted(tests), is_test_path)
    # A traceback into the repository is the precise pointer: there the title's list cost
    # recall (localize.py: 97 such issues, 0.892 -> 0.882; the other 250, 0.742 -> 0.777).
    lists["title"] = title_files(index, text) if titled and not lists["frames"] else []
    return Signals(lists, scores, tested)


def _matching_lists(index: RepoIndex, text: str, focus: Focus,
                    chunk_hits: list[ChunkHit] | None = None
                    ) -> tuple[dict[str, list[str]], dict[str, dict[str, float]]]:
    """The lists that match the text's own words (BM25 over files and over chunks, the files
    it names or whose definitions it names, path components) and the two BM25 scores."""
    file_scores = dict(index.rank_files_lexical(text, LEXICAL_DEPTH))
    best_chunk: dict[str, float] = {}
    if chunk_hits is None:
        chunk_hits = index.search(text, LEXICAL_DEPTH, verify=False)
    for hit in chunk_hits:
        best_chunk[hit.path] = max(best_chunk.get(hit.path, 0.0), hit.score)
    lists = {"files": list(file_scores),
             "chunks": sorted(best_chunk, key=lambda p: -best_chunk[p]),
             "mentions": sorted(focus.files, key=lambda p: -focus.files[p]),
             "paths": path_term_files(index, text)[:LEXICAL_DEPTH]}
    return lists, {"files": file_scores, "chunks": best_chunk}


def title_files(index: RepoIndex, text: str) -> list[str]:
    """The first TITLE_DEPTH files for the title alone, ranked by the lists matching its
    words, tests a step lower; none for a one-line text (the title is the whole text)."""
    text = text.strip()
    if "\n" not in text:
        return []
    title = title_of(text)
    # A session ranks its task again every turn: the same title, until the index changes.
    known: dict[str, list[str]] = index.memo("title_files", dict)
    if title not in known:
        lists, scores = _matching_lists(index, title, focus_of(index, title))
        known[title] = [p for p, _ in fuse(Signals(lists, scores), TITLE_DEPTH,
                                           priors=query_prior)]
    return list(known[title])


def fuse(found: Signals, limit: int = 50, weights: dict[str, float] | None = None,
         score_weights: dict[str, float] | None = None, k: float = RRF_K,
         priors: Callable[[str], float] = prior) -> list[tuple[str, float]]:
    """Weighted reciprocal rank over the lists, a share of the BM25 scores, then the priors
    (`prior` unless the caller knows better, e.g. a query that asks for tests)."""
    weights = WEIGHTS if weights is None else weights
    score_weights = SCORE_WEIGHTS if score_weights is None else score_weights
    fused: dict[str, float] = defaultdict(float)
    for name, ranked in found.lists.items():
        weight = weights.get(name, 0.0)
        for position, path in enumerate(ranked):
            fused[path] += weight / (k + position + 1)
    for name, scores in found.scores.items():
        top = max(scores.values(), default=0.0)
        if top > 0:
            for path, score in scores.items():
                fused[path] += score_weights.get(name, 0.0) * score / top
    head = sorted(fused.items(), key=lambda item: (-item[1], item[0]))[:TESTED_DEPTH]
    for path, score in head:
        for source in found.tested.get(path, []):
            fused[source] += TESTED_SHARE * score
    for path in fused:
        fused[path] *= priors(path)
    return sorted(fused.items(), key=lambda item: (-item[1], item[0]))[:limit]


SEMANTIC_WEIGHT = 1.0


def fuse_semantic(ranked: list[tuple[str, float]], semantic: list[str], limit: int = 50,
                  weight: float = SEMANTIC_WEIGHT, priors: Callable[[str], float] = prior
                  ) -> list[tuple[str, float]]:
    """Add a semantic file ranking to `rank_files`' scores by the same weighted reciprocal
    rank (and the same priors); pass `rank_files` a limit of at least `LEXICAL_DEPTH`."""
    fused = dict(ranked)
    for position, path in enumerate(semantic):
        fused[path] = fused.get(path, 0.0) + weight * priors(path) / (RRF_K + position + 1)
    return sorted(fused.items(), key=lambda item: (-item[1], item[0]))[:limit]


def semantic_files(index: RepoIndex, text: str) -> list[str] | None:
    """The files embeddings rank first for `text` when the setting turns them on and the
    repository's vectors are ready; else None. Never waits: the first call starts a
    background thread that loads the model and embeds the repository (minutes on a large
    one), and a context built meanwhile goes on by the words."""
    if not embeddings.enabled():
        return None
    try:
        found = embeddings.rank_files_semantic_ready(index, text, LEXICAL_DEPTH)
    except embeddings.EmbeddingsUnavailable:  # the model would not load (logged once)
        return None
    return None if found is None else [p for p, _ in found]
