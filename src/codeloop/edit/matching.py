"""The matching ladder: find where one edit's search text sits in a file, or refuse.

Levels run from strict to lenient and stop at the first level with any candidate. Two or
more candidates at a level is an ambiguity: it is settled only by an anchor, a line-number
hint or an end-of-file marker that singles one out, never by picking the first.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Callable
from dataclasses import dataclass
from difflib import SequenceMatcher

from rapidfuzz import fuzz

from codeloop.edit.errors import AmbiguousMatch, BadReplacement, NoMatch
from codeloop.edit.normalize import (
    LineFix,
    fit_indent,
    identity,
    key_fold,
    key_rstrip,
    key_strip,
    trailing_fix,
    unicode_fix,
)
from codeloop.edit.textfile import normalize_newlines

LEVELS = (
    "exact",
    "trailing_whitespace",
    "indentation",
    "unicode",
    "blank_lines",
    "elision",
    "fuzzy",
)
ELISION_MARKERS = frozenset({"...", "…", "# ...", "// ...", "/* ... */", "# …"})
# A line-number hint settles an ambiguity only when exactly one candidate is this close.
HINT_SLACK = 5
# Fuzzy matching accepts a window only this similar (0-100) and this far ahead of the
# best window that does not overlap it.
FUZZY_MIN = 90.0
FUZZY_MARGIN = 8.0
MAX_SHOWN = 12

KeyFn = Callable[[str], str]
Span = tuple[int, int]


@dataclass(frozen=True)
class Edit:
    """One search/replace pair plus whatever says where it belongs."""

    search: str
    replace: str
    # False for str_replace semantics: `search` may be any substring, not whole lines.
    whole_lines: bool = True
    replace_all: bool = False
    hint_line: int | None = None
    anchors: tuple[str, ...] = ()
    at_eof: bool = False


@dataclass(frozen=True)
class EditResult:
    text: str
    strategy: str
    start_line: int
    old_lines: int
    new_lines: int
    already_applied: bool = False


@dataclass
class _Candidate:
    start: int
    end: int
    align: list[Span | None]
    fix: LineFix = identity


class _Doc:
    """A file split into lines, with per-normalisation keys computed once and on demand."""

    def __init__(self, text: str) -> None:
        self.trailing = text.endswith("\n") or text == ""
        body = text[:-1] if text.endswith("\n") else text
        self.lines = body.split("\n") if text else []
        self._keys: dict[KeyFn, list[str]] = {}
        self._index: dict[tuple[KeyFn, bool], tuple[list[int], str, list[int]]] = {}

    def keys(self, fn: KeyFn) -> list[str]:
        if fn not in self._keys:
            self._keys[fn] = [fn(line) for line in self.lines]
        return self._keys[fn]

    def index(self, fn: KeyFn, nonblank: bool) -> tuple[list[int], str, list[int]]:
        """(file line of each indexed line, their keys joined by newlines, char offsets)."""
        token = (fn, nonblank)
        if token not in self._index:
            keys = self.keys(fn)
            rows = [i for i, k in enumerate(keys) if k] if nonblank else list(range(len(keys)))
            picked = [keys[i] for i in rows]
            offsets, pos = [], 0
            for k in picked:
                offsets.append(pos)
                pos += len(k) + 1
            self._index[token] = (rows, "\n".join(picked) + "\n", offsets)
        return self._index[token]

    def find(self, fn: KeyFn, needle: list[str], nonblank: bool = False) -> list[int]:
        """Positions (in the index's rows) where `needle` keys occur as consecutive lines."""
        rows, hay, offsets = self.index(fn, nonblank)
        if not needle or not rows:
            return []
        pattern = "\n".join(needle) + "\n"
        found, at = [], hay.find(pattern)
        while at != -1:
            if at == 0 or hay[at - 1] == "\n":
                found.append(bisect.bisect_left(offsets, at))
            at = hay.find(pattern, at + 1)
        return found

    def render(self, lines: list[str]) -> str:
        if not lines:
            return ""
        return "\n".join(lines) + ("\n" if self.trailing else "")


def split_lines(text: str) -> list[str]:
    """Lines of model-supplied text; one final newline does not make an extra empty line."""
    text = normalize_newlines(text)
    if not text:
        return []
    return (text[:-1] if text.endswith("\n") else text).split("\n")


def is_marker(line: str) -> bool:
    return line.strip() in ELISION_MARKERS


def apply_edit(text: str, edit: Edit, path: str = "the file") -> EditResult:
    """Apply one edit to `text`; raise NoMatch, AmbiguousMatch or BadReplacement."""
    search, replace = normalize_newlines(edit.search), normalize_newlines(edit.replace)
    if not search.strip():
        if not text.strip():
            return EditResult(replace, "exact", 1, 0, len(split_lines(replace)))
        raise BadReplacement(
            f"the search text is empty but {path} already has content",
            "give the lines to replace as the search text, or use write_file to rewrite the file",
        )
    if not edit.whole_lines:
        done = _substring(text, search, replace, edit, path)
        if done is not None:
            return done
    doc = _Doc(text)
    S, R = split_lines(search), split_lines(replace)
    for level in LEVELS[0 if edit.whole_lines else 1:]:
        cands = _FINDERS[level](doc, S, R)
        if not cands:
            continue
        if edit.replace_all:
            return _apply_all(doc, cands, S, R, level, path)
        chosen = _choose(doc, cands, edit, level, path)
        return _apply_one(doc, chosen, S, R, level)
    again = _already_applied(doc, S, R)
    if again is not None:
        return EditResult(text, "already_applied", again + 1, 0, 0, already_applied=True)
    raise NoMatch(f"the search text was not found in {path}. {closest_region(doc, S)}",
                  "copy the lines to change exactly as the file has them, with a few lines of context")


# --- exact substring (str_replace semantics) -------------------------------------------


def _substring(text: str, search: str, replace: str, edit: Edit, path: str) -> EditResult | None:
    hits, at = [], text.find(search)
    while at != -1:
        hits.append(at)
        at = text.find(search, at + 1)
    if not hits:
        return None
    if len(hits) > 1 and not edit.replace_all:
        lines = [text.count("\n", 0, h) + 1 for h in hits]
        raise _ambiguous(path, lines, "exact")
    if edit.replace_all:
        if any(b - a < len(search) for a, b in itertools.pairwise(hits)):
            raise _ambiguous(path, [text.count("\n", 0, h) + 1 for h in hits], "exact (overlapping)")
        new_text = text.replace(search, replace)
    else:
        new_text = text[: hits[0]] + replace + text[hits[0] + len(search):]
    return EditResult(new_text, "exact", text.count("\n", 0, hits[0]) + 1,
                      search.count("\n") + 1, replace.count("\n") + 1)


# --- finders, one per level ------------------------------------------------------------


def _fixer(level: int, pairs: list[tuple[str, str]], R: list[str]) -> LineFix | None:
    """The fix-up applied to new lines given the level and the aligned (search, file) lines."""
    fixes: list[LineFix] = [trailing_fix(pairs)]
    if level >= LEVELS.index("indentation"):
        reindent = fit_indent([p for p in pairs if p[0].strip()], R) if pairs else identity
        if reindent is None:
            return None
        fixes.append(reindent)
    if level >= LEVELS.index("unicode"):
        fixes.insert(0, unicode_fix(pairs))
    fixes = [f for f in fixes if f is not identity]
    if not fixes:
        return identity

    def fix(line: str) -> str:
        for f in fixes:
            line = f(line)
        return line

    return fix


def _positional(level: str, fn: KeyFn) -> Callable[[_Doc, list[str], list[str]], list[_Candidate]]:
    rank = LEVELS.index(level)

    def find(doc: _Doc, S: list[str], R: list[str]) -> list[_Candidate]:
        out = []
        for start in doc.find(fn, [fn(s) for s in S]):
            pairs = list(zip(S, doc.lines[start:start + len(S)], strict=True))
            fix = _fixer(rank, pairs, R)
            if fix is not None:
                out.append(_Candidate(start, start + len(S),
                                      [(start + i, start + i + 1) for i in range(len(S))], fix))
        return out

    return find


def _piece_matches(doc: _Doc, S: list[str], idx: list[int]) -> list[tuple[int, int, dict[int, Span]]]:
    """Where the search lines `idx` (blank lines ignored) occur: (start, end, alignment)."""
    nonblank = [i for i in idx if key_fold(S[i])]
    if not nonblank:
        return []
    rows = doc.index(key_fold, True)[0]
    out = []
    for p in doc.find(key_fold, [key_fold(S[i]) for i in nonblank], nonblank=True):
        align: dict[int, Span] = {}
        files = rows[p:p + len(nonblank)]
        for si, fi in zip(nonblank, files, strict=True):
            align[si] = (fi, fi + 1)
        # Blank search lines between two matched lines pair up with the file's blank lines there.
        for (s0, f0), (s1, f1) in zip(zip(nonblank, files, strict=True),
                                      zip(nonblank[1:], files[1:], strict=False), strict=False):
            for si, fi in zip(range(s0 + 1, s1), range(f0 + 1, f1), strict=False):
                align[si] = (fi, fi + 1)
        out.append((files[0], files[-1] + 1, align))
    return out


def _blank_lines(doc: _Doc, S: list[str], R: list[str]) -> list[_Candidate]:
    out = []
    for start, end, align in _piece_matches(doc, S, list(range(len(S)))):
        cand = _candidate(doc, S, R, start, end, align, LEVELS.index("blank_lines"))
        if cand is not None:
            out.append(cand)
    return out


def _candidate(doc: _Doc, S: list[str], R: list[str], start: int, end: int,
               align: dict[int, Span], rank: int) -> _Candidate | None:
    pairs = [(S[si], doc.lines[a]) for si, (a, b) in sorted(align.items()) if b - a == 1]
    fix = _fixer(rank, pairs, [r for r in R if not is_marker(r)])
    if fix is None:
        return None
    return _Candidate(start, end, [align.get(i) for i in range(len(S))], fix)


def _elision(doc: _Doc, S: list[str], R: list[str]) -> list[_Candidate]:
    markers = [i for i, s in enumerate(S) if is_marker(s)]
    if not markers:
        return []
    if sum(map(is_marker, R)) != len(markers):
        raise BadReplacement(
            "the search text elides code with '...' but the replacement has a different number "
            "of '...' lines",
            "use one '...' line in the replacement for each '...' line in the search",
        )
    bounds = [-1, *markers, len(S)]
    pieces = [list(range(a + 1, b)) for a, b in itertools.pairwise(bounds)]
    pieces = [p for p in pieces if any(key_fold(S[i]) for i in p)]
    if not pieces:
        return []
    found = [_piece_matches(doc, S, p) for p in pieces]
    if any(not f for f in found):
        return []
    chosen = _resolve_pieces(found)
    if chosen is None:
        return []
    align: dict[int, Span] = {}
    for piece in chosen:
        align.update(piece[2])
    for m in markers:
        before = [c for c in chosen if max(c[2]) < m]
        after = [c for c in chosen if min(c[2]) > m]
        lo = before[-1][1] if before else chosen[0][0]
        hi = after[0][0] if after else chosen[-1][1]
        align[m] = (lo, hi)
    cand = _candidate(doc, S, R, chosen[0][0], chosen[-1][1], align, LEVELS.index("elision"))
    return [cand] if cand is not None else []


def _resolve_pieces(
    found: list[list[tuple[int, int, dict[int, Span]]]],
) -> list[tuple[int, int, dict[int, Span]]] | None:
    """Pick one place per piece: unique outright, or unique between its placed neighbours."""
    placed: dict[int, tuple[int, int, dict[int, Span]]] = {
        k: f[0] for k, f in enumerate(found) if len(f) == 1
    }
    progress = True
    while progress and len(placed) < len(found):
        progress = False
        for k, options in enumerate(found):
            if k in placed:
                continue
            lo = max((placed[j][1] for j in placed if j < k), default=0)
            hi = min((placed[j][0] for j in placed if j > k), default=1 << 62)
            fits = [o for o in options if o[0] >= lo and o[1] <= hi]
            if not fits:
                return None
            if len(fits) == 1:
                placed[k] = fits[0]
                progress = True
    if len(placed) < len(found):
        k = min(set(range(len(found))) - placed.keys())
        raise AmbiguousMatch(
            f"a piece of the elided search text fits {len(found[k])} places "
            f"(lines {', '.join(str(o[0] + 1) for o in found[k][:MAX_SHOWN])})",
            "add a line of context to each piece between '...' lines so it is unique",
            [o[0] + 1 for o in found[k]],
        )
    chosen = [placed[k] for k in range(len(found))]
    if any(a[1] > b[0] for a, b in itertools.pairwise(chosen)):
        return None
    return chosen


@dataclass(frozen=True)
class _Scan:
    best: float
    start: int
    end: int
    runner_up: float
    runner_start: int


def fuzzy_scan(doc: _Doc, S: list[str]) -> _Scan | None:
    """The most similar window of the file (blank lines ignored) and the best one apart from it."""
    query_keys = [k for k in map(key_fold, S) if k]
    rows, _, _ = doc.index(key_fold, True)
    if not query_keys or not rows:
        return None
    keys = [doc.keys(key_fold)[r] for r in rows]
    query = "\n".join(query_keys)
    n = len(query_keys)
    scored: list[tuple[float, int, int]] = []
    for size in {max(1, n - 1), n, n + 1}:
        for p in range(max(1, len(keys) - size + 1)):
            score = fuzz.ratio(query, "\n".join(keys[p:p + size]))
            scored.append((score, p, min(p + size, len(keys))))
    scored.sort(key=lambda t: -t[0])
    best, bp, bq = scored[0]
    runner = next(((s, p) for s, p, q in scored if q <= bp or p >= bq), (0.0, -1))
    return _Scan(best, rows[bp], rows[bq - 1] + 1, runner[0],
                 rows[runner[1]] if runner[1] >= 0 else -1)


def _fuzzy(doc: _Doc, S: list[str], R: list[str]) -> list[_Candidate]:
    if sum(1 for s in S if s.strip()) < 2:
        return []
    scan = fuzzy_scan(doc, S)
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
    fix = _fixer(LEVELS.index("unicode"), exact_pairs, R)
    if fix is None:
        return []
    return [_Candidate(scan.start, scan.end, [align.get(i) for i in range(len(S))], fix)]


_FINDERS: dict[str, Callable[[_Doc, list[str], list[str]], list[_Candidate]]] = {
    "exact": _positional("exact", identity),
    "trailing_whitespace": _positional("trailing_whitespace", key_rstrip),
    "indentation": _positional("indentation", key_strip),
    "unicode": _positional("unicode", key_fold),
    "blank_lines": _blank_lines,
    "elision": _elision,
    "fuzzy": _fuzzy,
}


# --- choosing and applying ---------------------------------------------------------------


def _ambiguous(path: str, lines: list[int], level: str) -> AmbiguousMatch:
    shown = ", ".join(map(str, lines[:MAX_SHOWN])) + (" ..." if len(lines) > MAX_SHOWN else "")
    return AmbiguousMatch(
        f"the search text matches {len(lines)} places in {path} ({level} match) at lines {shown}",
        "add surrounding lines to the search text so it matches one place, or set replace_all",
        lines,
    )


def _anchor_position(doc: _Doc, anchors: tuple[str, ...]) -> int | None:
    """The line after the anchors, each sought after the previous one; None if one is missing."""
    pos = 0
    keys = doc.keys(key_fold)
    for anchor in anchors:
        want = key_fold(anchor)
        if not want:
            continue
        pos = next((i + 1 for i in range(pos, len(keys)) if keys[i].startswith(want)), -1)
        if pos < 0:
            return None
    return pos


def _choose(doc: _Doc, cands: list[_Candidate], edit: Edit, level: str, path: str) -> _Candidate:
    if len(cands) == 1:
        return cands[0]
    pool = cands
    if edit.anchors:
        pos = _anchor_position(doc, edit.anchors)
        after = [c for c in pool if pos is not None and c.start >= pos]
        pool = after or pool
    if len(pool) > 1 and edit.hint_line is not None:
        hint = edit.hint_line - 1
        near = [c for c in pool if abs(c.start - hint) <= HINT_SLACK]
        pool = near or pool
    if len(pool) > 1 and edit.at_eof:
        pool = [c for c in pool if c.end == len(doc.lines)] or pool
    if len(pool) == 1:
        return pool[0]
    raise _ambiguous(path, [c.start + 1 for c in pool], level)


def _patch(doc: _Doc, cand: _Candidate, S: list[str], R: list[str], level: str) -> list[str]:
    """The new lines for the candidate's window: file lines where the edit keeps them."""
    if level == "exact":
        return list(R)
    lines, out, p = doc.lines, [], cand.start
    elided = level == "elision"
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, S, R, autojunk=False).get_opcodes():
        if tag == "equal":
            for si in range(i1, i2):
                span = cand.align[si]
                if span is not None:
                    out.extend(lines[p:span[1]])
                    p = max(p, span[1])
            continue
        if elided and (any(is_marker(S[i]) for i in range(i1, i2))
                       or any(is_marker(R[j]) for j in range(j1, j2))):
            raise BadReplacement(
                "the '...' lines in the search and the replacement do not line up",
                "keep each '...' line at the same place in the search and the replacement",
            )
        spans = [s for s in (cand.align[i] for i in range(i1, i2)) if s is not None]
        if spans:
            out.extend(lines[p:spans[0][0]])
            p = max(p, spans[-1][1])
        out.extend(cand.fix(r) for r in R[j1:j2])
    out.extend(lines[p:cand.end])
    return out


def _apply_one(doc: _Doc, cand: _Candidate, S: list[str], R: list[str], level: str) -> EditResult:
    new = _patch(doc, cand, S, R, level)
    lines = doc.lines[:cand.start] + new + doc.lines[cand.end:]
    return EditResult(doc.render(lines), level, cand.start + 1, cand.end - cand.start, len(new))


def _apply_all(doc: _Doc, cands: list[_Candidate], S: list[str], R: list[str], level: str,
               path: str) -> EditResult:
    cands = sorted(cands, key=lambda c: c.start)
    if any(a.end > b.start for a, b in itertools.pairwise(cands)):
        raise _ambiguous(path, [c.start + 1 for c in cands], f"{level}, overlapping")
    lines, added = list(doc.lines), 0
    for cand in reversed(cands):
        new = _patch(doc, cand, S, R, level)
        lines[cand.start:cand.end] = new
        added += len(new)
    return EditResult(doc.render(lines), level, cands[0].start + 1,
                      sum(c.end - c.start for c in cands), added)


def _already_applied(doc: _Doc, S: list[str], R: list[str]) -> int | None:
    """The line where the replacement already stands, if it stands in exactly one place."""
    if not any(r.strip() for r in R) or [key_fold(s) for s in S] == [key_fold(r) for r in R]:
        return None
    for level in LEVELS[:LEVELS.index("blank_lines") + 1]:
        cands = _FINDERS[level](doc, R, R)
        if cands:
            return cands[0].start if len(cands) == 1 else None
    return None


def closest_region(doc: _Doc, S: list[str]) -> str:
    """A numbered excerpt of the file region most similar to the search text."""
    scan = fuzzy_scan(doc, S)
    if scan is None:
        return "The file is empty." if not doc.lines else ""
    end = min(scan.end, scan.start + 40)
    body = "\n".join(f"{i + 1:>5} | {doc.lines[i]}" for i in range(scan.start, end))
    more = f"\n  ... ({scan.end - end} more lines)" if end < scan.end else ""
    second = ""
    if scan.runner_start >= 0 and scan.best - scan.runner_up < FUZZY_MARGIN:
        second = (f"\n(The region at line {scan.runner_start + 1} is {scan.runner_up:.0f}% similar "
                  "too, so neither was edited.)")
    return (f"The closest region is lines {scan.start + 1}-{scan.end} "
            f"({scan.best:.0f}% similar):\n{body}{more}{second}")
