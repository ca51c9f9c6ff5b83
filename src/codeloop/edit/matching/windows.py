"""The levels that compare the search lines with consecutive file lines under one key:
exact, trailing whitespace, indentation and Unicode folding."""

from __future__ import annotations

from collections.abc import Callable

from codeloop.edit.matching.base import LEVELS, Candidate, KeyFn
from codeloop.edit.matching.document import Document, anchor_key, anchor_lines
from codeloop.edit.matching.fitting import fixer

Finder = Callable[[Document, list[str], list[str]], list[Candidate]]


def positional(level: str, fn: KeyFn) -> Finder:
    """The finder for `level`: windows whose lines equal the search lines under `fn`."""
    rank = LEVELS.index(level)

    def find(doc: Document, S: list[str], R: list[str]) -> list[Candidate]:
        out = []
        for start in _window_starts(doc, fn, [fn(s) for s in S]):
            pairs = list(zip(S, doc.lines[start:start + len(S)], strict=True))
            fix = fixer(rank, pairs)
            if fix is not None:
                out.append(Candidate(start, start + len(S),
                                     [(start + i, start + i + 1) for i in range(len(S))], fix))
        return out

    return find


def _window_starts(doc: Document, fn: KeyFn, keys: list[str]) -> list[int]:
    """Lines where `keys` match consecutive file lines, checking only lines holding the anchor."""
    k = anchor_key(keys)
    if k is None:
        return doc.find(fn, keys)
    n, total = len(keys), len(doc.lines)
    starts = [a - k for a in anchor_lines(doc, fn, keys[k]) if 0 <= a - k <= total - n]
    return [st for st in starts
            if all(fn(doc.lines[st + i]) == keys[i] for i in range(n))]
