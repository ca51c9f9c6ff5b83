"""The SQLite store's lexical matching for a store without FTS5: the stems FTS5's
`porter unicode61` tokenizer makes of a text, and FTS5's BM25 over them. The PostgreSQL
store uses both, so a recall there finds and orders what the SQLite store would.

The stems come from FTS5 itself (an in-memory table per thread and its `fts5vocab`), so the
two stores cannot disagree on a stem, whatever the Porter implementation does at its edges.
"""

from __future__ import annotations

import math
import sqlite3
import threading
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

# The tokenizer the SQLite store declares for memory_fts (store.py); both must stay equal.
TOKENIZER = "porter unicode61 tokenchars '_'"
# FTS5's bm25() constants (the SQLite documentation's k1 and b).
K1 = 1.2
B = 0.75

_local = threading.local()


def _conn() -> sqlite3.Connection:
    conn: sqlite3.Connection | None = getattr(_local, "conn", None)
    if conn is None:
        conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        conn.execute(f'CREATE VIRTUAL TABLE t USING fts5(x, tokenize="{TOKENIZER}")')
        conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
        _local.conn = conn
    return conn


def stems(terms: Iterable[str]) -> list[str]:
    """Every token FTS5 indexes for `" ".join(terms)`, in order (repeats kept: they are the
    term frequencies)."""
    text = " ".join(terms)
    if not text:
        return []
    conn = _conn()
    conn.execute("INSERT INTO t (rowid, x) VALUES (1, ?)", (text,))
    try:
        rows = conn.execute("SELECT term FROM v WHERE doc = 1 ORDER BY offset").fetchall()
    finally:
        conn.execute("DELETE FROM t WHERE rowid = 1")
    return [str(r[0]) for r in rows]


def bm25(query: Sequence[str], docs: Mapping[int, Sequence[str]], doc_freq: Mapping[str, int],
         total_docs: int, total_tokens: int) -> dict[int, float]:
    """FTS5's bm25() for an OR of single-token phrases (`query`: one stem per phrase; two
    words with one stem are two phrases, as in FTS5), negated (higher is better) as the
    SQLite store reports it. `docs` are the matching documents' stems; the statistics count
    every document in the store, as FTS5's do."""
    if total_docs <= 0:
        return {}
    avgdl = total_tokens / total_docs
    idf = []
    for term in query:
        hits = doc_freq.get(term, 0)
        # FTS5 clamps a term in more than half the rows to a tiny positive weight.
        idf.append((term, max(math.log((total_docs - hits + 0.5) / (hits + 0.5)), 1e-6)))
    scores = {}
    for doc, tokens in docs.items():
        counts = Counter(tokens)
        norm = K1 * (1 - B + B * len(tokens) / avgdl) if avgdl else K1
        score = 0.0
        for term, weight in idf:
            tf = counts.get(term, 0)
            if tf:
                score += weight * tf * (K1 + 1) / (tf + norm)
        if score:
            scores[doc] = score
    return scores
