"""How recalled memories are ordered and cut, whatever store found them.

A store hands over its candidates (the visible memories matching a query term, and the
nearest by embedding when vectors are on) with their BM25 score and cosine; this module
fuses them and keeps only the hits close to the best that hold as many of the query's
words. Every store backend shares it, so recall means the same everywhere.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from codeloop.index.terms import terms
from codeloop.memory.records import Hit, Memory

MAX_QUERY_TERMS = 64
# Words a task is phrased with whatever it is about, and English function words the code
# stopwords keep: matching a memory on them alone says nothing ("add" a column, "add" a
# dependency; "after" the fix, named "after" the ticket).
_QUERY_STOPWORD_TEXT = """
add added adding make making create change changed update updated fix fixed use using want
need needs please here now also just get got new way thing things
about above after again against all any before below between both during each few further
more most much only other over same than through under until very yet
"""
QUERY_STOPWORDS = frozenset(_QUERY_STOPWORD_TEXT.split())
# A hit scoring below this share of the best one is left out: recall fills a prompt, and a
# memory that shares one common word with the task costs tokens and attention.
RELATIVE_CUTOFF = 0.7
BM25_WEIGHT = 0.7  # against cosine similarity, when vectors are there
# A memory that shares no term with the query comes back only this close to it: the static
# model puts unrelated short texts at 0.1-0.25 and paraphrases at 0.3 and above
# (benchmarks/memory.py measures the effect).
MIN_COSINE = 0.3
# Two forms of one word: they share a prefix of at least `_MIN_SHARED` letters that is all
# of the shorter but its last `_SLACK - 1`, and the longer goes on for at most `2 * _SLACK`
# more ("dependency"/"dependencies", "test"/"tests", "format"/"formatting"). FTS5's Porter
# stemmer finds the candidates; this only counts the words each one holds.
_MIN_SHARED = 4
_SLACK = 3


@dataclass(frozen=True)
class Candidate:
    """A visible memory a store found for the query, with its raw scores (0 when the
    matching side did not find it)."""

    memory: Memory
    bm25: float
    cosine: float
    lexical: bool


def query_terms(text: str) -> list[str]:
    """The informative terms of a query, in order, once each."""
    unique = dict.fromkeys(t for t in terms(text) if t not in QUERY_STOPWORDS)
    return list(unique)[:MAX_QUERY_TERMS]


def fts_query(text: str) -> str:
    """An FTS5 query matching any of the text's terms (each quoted: never FTS syntax),
    without the verbs every task starts with."""
    return " OR ".join(f'"{t}"' for t in query_terms(text))


def same_word(a: str, b: str) -> bool:
    """Whether two terms are forms of one word (see `_MIN_SHARED`)."""
    if a == b:
        return True
    short, long = sorted((a, b), key=len)
    if len(short) < _MIN_SHARED:
        return False
    shared = 0
    for x, y in zip(short, long, strict=False):
        if x != y:
            break
        shared += 1
    return shared >= max(_MIN_SHARED, len(short) - _SLACK + 1) and len(long) - shared <= 2 * _SLACK


@lru_cache(maxsize=4096)
def _words(text: str) -> frozenset[str]:
    return frozenset(terms(text))


def matched(query: Sequence[str], text: str) -> int:
    """How many of the query's terms a memory holds, in any form (see `same_word`)."""
    words = _words(text)
    return sum(1 for term in query if any(same_word(term, w) for w in words))


def rank(query: str, candidates: Sequence[Candidate], k: int, use_vectors: bool) -> list[Hit]:
    """The best `k` candidates by fused score, without those far below the best."""
    wanted = query_terms(query)
    best = max((c.bm25 for c in candidates if c.lexical), default=0.0)
    scored = []
    for c in candidates:
        if not c.lexical and c.cosine < MIN_COSINE:
            continue
        bm25 = c.bm25 / best if c.lexical and best > 0 else 0.0
        score = (BM25_WEIGHT * bm25 + (1 - BM25_WEIGHT) * max(c.cosine, 0.0)
                 if use_vectors else bm25)
        scored.append(Hit(c.memory, score))
    scored.sort(key=lambda h: (-h.score, -h.memory.created))
    if not scored:
        return []
    # A runner-up that scores close on a single rare word ("errors" against "the tests fail
    # with fixture errors") while the best hit holds more of the query's words is about
    # something else. Two shared words or more keep it: a denial's reason ("never pip
    # install requests here") must not give way to a past session's summary that says
    # "requests" and "HTTP client" too.
    top = scored[0]
    need = min(2, matched(wanted, top.memory.text))
    return [h for h in scored if h is top or (h.score >= RELATIVE_CUTOFF * top.score
                                              and matched(wanted, h.memory.text) >= need)][:k]

