"""The fuzzy level (rapidfuzz similarity of line windows) and the closest-region report."""

from __future__ import annotations

from dataclasses import dataclass
from difflib import SequenceMatcher

from rapidfuzz import fuzz

from codeloop.edit.matching.base import LEVELS, Candidate, Span
from codeloop.edit.matching.document import Document
from codeloop.edit.matching.fitting import fixer
from codeloop.edit.normalize import key_fold

# Fuzzy matching accepts a window only this similar (0-100) and this far ahead of the
# best window that does not overlap it.
FUZZY_MIN = 90.0
FUZZY_MARGIN = 8.0


@dataclass(frozen=True)
class Scan:
    best: float
    start: int
    end: int
    runner_up: float
    runner_start: int


def fuzzy_scan(doc: Document, S: list[str], cutoff: float = 0.0) -> Scan | None:
    """The most similar window of the file (blank lines ignored) and the best one apart from it.

    Windows scoring under `cutoff` count as 0, which lets rapidfuzz skip most of them early.
    """
    token = (tuple(S), cutoff)
    if token in doc.scans:
        return doc.scans[token]
    query = "\n".join(k for k in map(key_fold, S) if k)
    rows, hay = doc.index(key_fold, True)
    if not query or not rows:
        return None
    n, total = query.count("\n") + 1, len(rows)
    offsets = [0]
    for key in hay.split("\n")[:-1]:
        offsets.append(offsets[-1] + len(key) + 1)
    ends = offsets[1:]
    scored: list[tuple[float, int, int]] = []
    for size in sorted({max(1, n - 1), n, n + 1}):
        size = min(size, total)
        for p in range(total - size + 1):
            score = fuzz.ratio(query, hay[offsets[p]:ends[p + size - 1] - 1], score_cutoff=cutoff)
            if score:
                scored.append((score, p, p + size))
    if not scored:
        doc.scans[token] = None
        return None
    scored.sort(key=lambda t: -t[0])
    best, bp, bq = scored[0]
    runner = next(((sc, p) for sc, p, q in scored if q <= bp or p >= bq), (0.0, -1))
    scan = Scan(best, rows[bp], rows[bq - 1] + 1, runner[0], rows[runner[1]] if runner[1] >= 0 else -1)
    doc.scans[token] = scan
    return scan


def fuzzy(doc: Document, S: list[str], R: list[str]) -> list[Candidate]:
    if sum(1 for s in S if s.strip()) < 2:
        return []
    scan = fuzzy_scan(doc, S, FUZZY_MIN - FUZZY_MARGIN)
    if scan is None or scan.best < FUZZY_MIN:
        return []
    if scan.best - scan.runner_up < FUZZY_MARGIN:
        return []
    window = list(range(scan.start, scan.end))
    wkeys = [key_fold(doc.lines[i]) for i in window]
    skeys = [key_fold(s) for s in S]
    align: dict[int, Span] = {}
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, skeys, wkeys, autojunk=False).get_opcodes():
        if tag == "equal" or (tag == "replace" and i2 - i1 == j2 - j1):
            for si, wi in zip(range(i1, i2), range(j1, j2), strict=True):
                if skeys[si] and (tag == "equal" or fuzz.ratio(skeys[si], wkeys[wi]) >= 70):
                    align[si] = (window[wi], window[wi] + 1)
    if not align:
        return []
    exact_pairs = [(S[si], doc.lines[a]) for si, (a, _) in align.items() if skeys[si] == key_fold(doc.lines[a])]
    # New lines are placed by the indentation of the lines that match exactly; without one
    # uniform rule there is no safe place for them.
    fix = fixer(LEVELS.index("unicode"), exact_pairs)
    if fix is None:
        return []
    return [Candidate(scan.start, scan.end, [align.get(i) for i in range(len(S))], fix)]


def closest_region(doc: Document, S: list[str]) -> str:
    """A numbered excerpt of the file region most similar to the search text."""
    scan = fuzzy_scan(doc, S)
    if scan is None:
        return "The file is empty." if not doc.lines else ""
    end = min(scan.end, scan.start + 40)
    body = "\n".join(f"{i + 1:>5} | {doc.lines[i]}" for i in range(scan.start, end))
    more = f"\n  ... ({scan.end - end} more lines)" if end < scan.end else ""
    second = ""
    if scan.best >= FUZZY_MIN and scan.runner_start >= 0 and scan.best - scan.runner_up < FUZZY_MARGIN:
        second = (f"\n(The region at line {scan.runner_start + 1} is {scan.runner_up:.0f}% similar "
                  "too, so neither was edited.)")
    return (f"The closest region is lines {scan.start + 1}-{scan.end} "
            f"({scan.best:.0f}% similar):\n{body}{more}{second}")
