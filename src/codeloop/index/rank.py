"""Rank the files of a repository for a piece of text (a task, an issue, a focus).

Four signals, fused by weighted reciprocal rank: BM25 over whole files, BM25 over chunks
(best chunk per file), files the text names or that define identifiers the text names, and
PageRank over the reference graph personalised to those files.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from functools import lru_cache

from codeloop.index import embeddings
from codeloop.index.graph import pagerank
from codeloop.index.languages import detect_language
from codeloop.index.service import ChunkHit, RepoIndex

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
_PATHLIKE = re.compile(r"[A-Za-z0-9_.\-/]+\.[A-Za-z]{1,5}\b|[A-Za-z_][\w]*(?:\.[A-Za-z_]\w*){1,}")
_RRF_K = 10.0
LEXICAL_DEPTH = 200
_SPECIFIC_FILES = 4  # an identifier defined in more files than this says little

WEIGHTS = {"files": 1.0, "chunks": 1.0, "mentions": 1.5, "pagerank": 0.5}
# Where a fix usually lands: source over tests, code over prose and config.
_TEST_PATH = re.compile(r"(^|/)(tests?|testing)/|(^|/)test_[^/]*$|_tests?\.[a-z]+$|conftest\.py$")
_PROSE = frozenset({"markdown", "rst", "text", "yaml", "json", "toml", "ini", "html", "xml"})
TEST_PRIOR = 0.6
PROSE_PRIOR = 0.5


@lru_cache(maxsize=65_536)
def prior(path: str) -> float:
    """How likely a file is to be the one to change, before reading the text."""
    if detect_language(path) in _PROSE:
        return PROSE_PRIOR
    return TEST_PRIOR if _TEST_PATH.search(path) else 1.0


@dataclass
class Focus:
    """What a text points at: files it names and identifiers the repository defines."""

    files: dict[str, float] = field(default_factory=dict)
    identifiers: set[str] = field(default_factory=set)


def _code_like(word: str) -> bool:
    return "_" in word or any(c.isupper() for c in word[1:]) or (word[:1].isupper() and
                                                                  len(word) > 3)


def _suffix_map(paths: list[str]) -> dict[str, list[str]]:
    """Every path suffix (and dotted module name) to the files it names."""
    by_suffix: dict[str, list[str]] = defaultdict(list)
    for p in paths:
        parts = p.split("/")
        for i in range(len(parts)):
            by_suffix["/".join(parts[i:])].append(p)
        if p.endswith(".py"):
            dotted = p[:-3].replace("/", ".")
            by_suffix[dotted].append(p)
            by_suffix[dotted.removesuffix(".__init__")].append(p)
    return dict(by_suffix)


def _path_mentions(text: str, by_suffix: dict[str, list[str]]) -> dict[str, float]:
    found: dict[str, float] = {}
    for m in _PATHLIKE.findall(text):
        m = m.strip("./")
        hits = by_suffix.get(m)
        if hits and len(hits) <= _SPECIFIC_FILES:
            for p in hits:
                found[p] = max(found.get(p, 0.0), 1.0 / len(hits))
    return found


def focus_of(index: RepoIndex, text: str) -> Focus:
    """Files and identifiers `text` mentions that exist in the repository."""
    suffixes = index.memo("path_suffixes", lambda: _suffix_map(index.paths()))
    focus = Focus(files=_path_mentions(text, suffixes))
    words: set[str] = set()
    for token in _IDENT.findall(text):
        for part in token.split("."):
            if len(part) >= 3:
                words.add(part)
    defined = index.files_defining(words)
    for word, files in defined.items():
        if not files:
            continue
        focus.identifiers.add(word)
        if len(files) > _SPECIFIC_FILES:
            continue
        weight = (1.0 if _code_like(word) else 0.3) / len(files)
        for p in files:
            focus.files[p] = focus.files.get(p, 0.0) + weight
    return focus


def rank_files(index: RepoIndex, text: str, limit: int = 50, focus: Focus | None = None,
               chunk_hits: list[ChunkHit] | None = None) -> list[tuple[str, float]]:
    """The files most relevant to `text`, best first, with fused scores. `chunk_hits` are
    the caller's `index.search(text, LEXICAL_DEPTH, verify=False)` if it has them."""
    focus = focus if focus is not None else focus_of(index, text)
    lists: dict[str, list[str]] = {}
    lists["files"] = [p for p, _ in index.rank_files_lexical(text, LEXICAL_DEPTH)]
    best_chunk: dict[str, float] = {}
    if chunk_hits is None:
        chunk_hits = index.search(text, LEXICAL_DEPTH, verify=False)
    for hit in chunk_hits:
        best_chunk[hit.path] = max(best_chunk.get(hit.path, 0.0), hit.score)
    lists["chunks"] = sorted(best_chunk, key=lambda p: -best_chunk[p])
    lists["mentions"] = sorted(focus.files, key=lambda p: -focus.files[p])
    graph = index.graph()
    personal = dict(focus.files)
    for i, p in enumerate(lists["files"][:20]):
        personal[p] = personal.get(p, 0.0) + 1.0 / (i + 5)
    ranks = pagerank(graph, personal, focus.identifiers)
    order = ranks.argsort()[::-1][:LEXICAL_DEPTH]
    lists["pagerank"] = [graph.paths[i] for i in order if ranks[i] > 0]
    fused: dict[str, float] = defaultdict(float)
    for name, ranked in lists.items():
        for position, path in enumerate(ranked):
            fused[path] += WEIGHTS[name] / (_RRF_K + position + 1)
    for path in fused:
        fused[path] *= prior(path)
    return sorted(fused.items(), key=lambda item: (-item[1], item[0]))[:limit]


SEMANTIC_WEIGHT = 1.0


def fuse_semantic(ranked: list[tuple[str, float]], semantic: list[str], limit: int = 50,
                  weight: float = SEMANTIC_WEIGHT) -> list[tuple[str, float]]:
    """Add a semantic file ranking to `rank_files`' scores by the same weighted reciprocal
    rank (and the same priors); pass `rank_files` a limit of at least `LEXICAL_DEPTH`."""
    fused = dict(ranked)
    for position, path in enumerate(semantic):
        fused[path] = fused.get(path, 0.0) + weight * prior(path) / (_RRF_K + position + 1)
    return sorted(fused.items(), key=lambda item: (-item[1], item[0]))[:limit]


def with_embeddings(index: RepoIndex, text: str, ranked: list[tuple[str, float]],
                    limit: int = 50) -> list[tuple[str, float]]:
    """`ranked` (from `rank_files`) fused with embeddings when the setting turns them on,
    else `ranked` cut to `limit`."""
    if not embeddings.enabled():
        return ranked[:limit]
    semantic = [p for p, _ in embeddings.rank_files_semantic(index, text, LEXICAL_DEPTH)]
    return fuse_semantic(ranked, semantic, limit)
