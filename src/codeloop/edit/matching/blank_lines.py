"""The blank-lines level: the search's non-blank lines in order, with blank lines skipped."""

from __future__ import annotations

from dataclasses import dataclass

from codeloop.edit.matching.base import LEVELS, Candidate, Span
from codeloop.edit.matching.document import Document, anchor_key, anchor_lines
from codeloop.edit.matching.fitting import fixer
from codeloop.edit.normalize import key_fold


@dataclass(frozen=True)
class Placement:
    """Where a run of search lines sits: file lines [start, end) and each search line's span.

    `alt` pairs the search's blank lines with the file's from the start of each run of blank
    lines instead of its end; the two differ only where the counts of blank lines differ.
    """

    start: int
    end: int
    align: dict[int, Span]
    alt: dict[int, Span]


def blank_lines(doc: Document, S: list[str], R: list[str]) -> list[Candidate]:
    out = []
    for placed in piece_matches(doc, S, list(range(len(S)))):
        cand = aligned_candidate(doc, S, R, placed, LEVELS.index("blank_lines"))
        if cand is not None:
            out.append(cand)
    return out


def aligned_candidate(doc: Document, S: list[str], R: list[str], placed: Placement,
                      rank: int) -> Candidate | None:
    """The candidate for an alignment, or None when no indentation rule fits its lines."""
    pairs = [(S[si], doc.lines[a]) for si, (a, b) in sorted(placed.align.items()) if b - a == 1]
    fix = fixer(rank, pairs)
    if fix is None:
        return None
    align = [placed.align.get(i) for i in range(len(S))]
    alt = [placed.alt.get(i) for i in range(len(S))]
    return Candidate(placed.start, placed.end, align, fix, alt if alt != align else None)


def piece_matches(doc: Document, S: list[str], idx: list[int]) -> list[Placement]:
    """Where the search lines `idx` (blank lines ignored) occur, with their alignments."""
    nonblank = [i for i in idx if key_fold(S[i])]
    if not nonblank:
        return []
    out = []
    for files in _nonblank_runs(doc, [key_fold(S[i]) for i in nonblank]):
        align: dict[int, Span] = {}
        for si, fi in zip(nonblank, files, strict=True):
            align[si] = (fi, fi + 1)
        alt = dict(align)
        # Blank search lines between two matched lines pair up with the file's blank lines
        # there. From the end of the gap by default: a blank line the search lost is then
        # the first of the file's run, so the run stays together. Where the counts differ
        # the pairing is a guess; `alt` pairs from the start so that a caller can tell
        # whether the guess changes the result.
        for (s0, f0), (s1, f1) in zip(zip(nonblank, files, strict=True),
                                      zip(nonblank[1:], files[1:], strict=False), strict=False):
            for si, fi in zip(reversed(range(s0 + 1, s1)), reversed(range(f0 + 1, f1)), strict=False):
                align[si] = (fi, fi + 1)
            for si, fi in zip(range(s0 + 1, s1), range(f0 + 1, f1), strict=False):
                alt[si] = (fi, fi + 1)
        # Blank lines at either end pair up with blank file lines just outside the match.
        lo, hi = files[0], files[-1] + 1
        for si in range(nonblank[0] - 1, idx[0] - 1, -1):
            if lo == 0 or doc.lines[lo - 1].strip():
                break
            lo -= 1
            align[si] = alt[si] = (lo, lo + 1)
        for si in range(nonblank[-1] + 1, idx[-1] + 1):
            if hi >= len(doc.lines) or doc.lines[hi].strip():
                break
            align[si] = alt[si] = (hi, hi + 1)
            hi += 1
        out.append(Placement(lo, hi, align, alt))
    return out


def _nonblank_runs(doc: Document, keys: list[str]) -> list[list[int]]:
    """File lines matching `keys` in order with blank lines skipped, found from an anchor line."""
    k = anchor_key(keys)
    if k is None:
        rows = doc.index(key_fold, True)[0]
        return [rows[p:p + len(keys)] for p in doc.find(key_fold, keys, nonblank=True)]
    lines, out = doc.lines, []
    for a in anchor_lines(doc, key_fold, keys[k]):
        if key_fold(lines[a]) != keys[k]:
            continue
        files, ok = [a], True
        p = a
        for key in reversed(keys[:k]):
            p -= 1
            while p >= 0 and not key_fold(lines[p]):
                p -= 1
            if p < 0 or key_fold(lines[p]) != key:
                ok = False
                break
            files.insert(0, p)
        p = a
        for key in keys[k + 1:] if ok else []:
            p += 1
            while p < len(lines) and not key_fold(lines[p]):
                p += 1
            if p >= len(lines) or key_fold(lines[p]) != key:
                ok = False
                break
            files.append(p)
        if ok:
            out.append(files)
    return out
