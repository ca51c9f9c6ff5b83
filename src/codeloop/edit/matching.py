"""The matching ladder: find where one edit's search text sits in a file, or refuse.

Levels run from strict to lenient and stop at the first level with any candidate. Two or
more candidates at a level is an ambiguity: it is settled only by an anchor, a line-number
hint or an end-of-file marker that singles one out, never by picking the first.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from difflib import SequenceMatcher

from rapidfuzz import fuzz

from codeloop.edit.errors import AmbiguousMatch, BadReplacement, NoMatch
from codeloop.edit.normalize import (
    LineFix,
    aligned_prefix,
    columns,
    fit_indent,
    identity,
    key_fold,
    key_rstrip,
    key_strip,
    lead,
    scaled_levels,
    structural,
    style_fix,
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
# A line-number hint settles an ambiguity when one candidate is nearest to it and this close
# (after the shift of earlier hunks): a looser hint once picked a duplicate block nearby.
HINT_SLACK = 1
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
    # Search indent widths when the re-indent scales widths (e.g. 2 -> 4 spaces).
    levels: set[int] | None = None


class _Doc:
    """A file split into lines, with per-normalisation keys computed once and on demand."""

    def __init__(self, text: str) -> None:
        self.trailing = text.endswith("\n") or text == ""
        body = text[:-1] if text.endswith("\n") else text
        self.body = body
        self.lines = body.split("\n") if text else []
        self.ascii = text.isascii()
        self._non_ascii: list[int] | None = None
        self._keys: dict[KeyFn, list[str]] = {}
        self._index: dict[tuple[KeyFn, bool], tuple[list[int], str]] = {}
        self.scans: dict[tuple[tuple[str, ...], float], _Scan | None] = {}

    def keys(self, fn: KeyFn) -> list[str]:
        if fn not in self._keys:
            if fn is key_fold:
                # str.translate with a dict is slow per character; only non-ASCII lines
                # can change when folded.
                self._keys[fn] = [line.strip() if line.isascii() else key_fold(line)
                                  for line in self.lines]
            else:
                self._keys[fn] = [fn(line) for line in self.lines]
        return self._keys[fn]

    def index(self, fn: KeyFn, nonblank: bool) -> tuple[list[int], str]:
        """(file line of each indexed line, their keys joined and newline-terminated)."""
        token = (fn, nonblank)
        if token not in self._index:
            keys = self.keys(fn)
            rows = [i for i, k in enumerate(keys) if k] if nonblank else list(range(len(keys)))
            picked = [keys[i] for i in rows] if nonblank else keys
            self._index[token] = (rows, "\n".join(picked) + "\n")
        return self._index[token]

    def find(self, fn: KeyFn, needle: list[str], nonblank: bool = False) -> list[int]:
        """Positions (in the index's rows) where `needle` keys occur as consecutive lines."""
        rows, hay = self.index(fn, nonblank)
        if not needle or not rows:
            return []
        pattern = "\n".join(needle) + "\n"
        found, at, line, prev = [], hay.find(pattern), 0, 0
        while at != -1:
            if at == 0 or hay[at - 1] == "\n":
                line += hay.count("\n", prev, at)
                prev = at
                found.append(line)
            at = hay.find(pattern, at + 1)
        return found

    def non_ascii_lines(self) -> list[int]:
        if self._non_ascii is None:
            self._non_ascii = [] if self.ascii else [i for i, x in enumerate(self.lines)
                                                     if not x.isascii()]
        return self._non_ascii

    def lines_containing(self, needle: str) -> list[int]:
        """Indices of lines whose raw text contains `needle`, found by str.find over the text."""
        out: list[int] = []
        body, line, prev = self.body, 0, 0
        at = body.find(needle)
        while at != -1:
            line += body.count("\n", prev, at)
            prev = at
            out.append(line)
            eol = body.find("\n", at)
            at = body.find(needle, eol + 1) if eol != -1 else -1
        return out

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
    if not search or (not search.strip() and not text.strip()):
        if not text.strip():
            return EditResult(replace, "exact", 1, 0, len(split_lines(replace)))
        raise BadReplacement(
            f"the search text is empty but {path} already has content",
            "give the lines to replace as the search text, or use write_file to rewrite the file",
        )
    S, R = split_lines(search), split_lines(replace)
    first = 0
    if not edit.whole_lines:
        style = style_fix(text, R)
        if style is not identity:
            replace = "\n".join(style(r) for r in replace.split("\n"))
            R = split_lines(replace)
        done = _substring(text, search, replace, edit, path)
        if done is not None:
            return done
        first = 1
    elif not edit.replace_all:
        style = style_fix(text, R)
        if style is not identity:
            R = [style(r) for r in R]
        hits = _line_hits(text, S)
        if len(hits) == 1:
            return _splice(text, hits[0], S, R)
        if hits:
            return _splice(text, _choose_hit(text, hits, S, edit, path), S, R)
        first = 1
    doc = _Doc(text)
    for level in LEVELS[first:]:
        if level == "fuzzy":
            # Before guessing approximately, check whether the edit was made already: an
            # inserted line makes the old text "similar" to the new, and fuzzy would insert twice.
            again = _already_applied(doc, S, R)
            if again is not None:
                return EditResult(text, "already_applied", again + 1, 0, 0, already_applied=True)
        if _same_as_previous(level, doc, S):
            continue
        cands = _FINDERS[level](doc, S, R)
        if not cands:
            continue
        if edit.replace_all:
            return _apply_all(doc, cands, S, R, level, path)
        chosen = _choose(doc, cands, edit, level, path)
        return _apply_one(doc, chosen, S, R, level)
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
        new_text = text[: hits[0]] + _indent_like_hit(text, hits[0], search, replace) + text[hits[0] + len(search):]
    return EditResult(new_text, "exact", text.count("\n", 0, hits[0]) + 1,
                      search.count("\n") + 1, replace.count("\n") + 1)


def _same_as_previous(level: str, doc: _Doc, S: list[str]) -> bool:
    """Whether `level` cannot find anything the level before it did not (a cheap skip)."""
    return level == "unicode" and doc.ascii and all(s.isascii() for s in S)


def _indent_like_hit(text: str, at: int, search: str, replace: str) -> str:
    """Indent a multi-line replacement for a one-line search that starts after indentation.

    `return x` -> `y = 1\nreturn y` written without the file's indentation means every new
    line belongs at the search's indentation, not only the first.
    """
    prefix = text[text.rfind("\n", 0, at) + 1:at]
    rest = replace.split("\n")[1:]
    if "\n" in search or not rest or prefix.strip() or not prefix:
        return replace
    if all(line.startswith(prefix) for line in rest if line.strip()):
        return replace
    head = replace.split("\n")[0]
    return "\n".join([head, *(prefix + line if line.strip() else line for line in rest)])


def _line_hits(text: str, S: list[str]) -> list[int]:
    """Character offsets where the lines S occur whole in `text` (the fast exact path)."""
    hay = text if text.endswith("\n") else text + "\n"
    pattern = "\n".join(S) + "\n"
    hits, at = [], hay.find(pattern)
    while at != -1:
        if at == 0 or hay[at - 1] == "\n":
            hits.append(at)
        at = hay.find(pattern, at + 1)
    return hits


def _choose_hit(text: str, hits: list[int], S: list[str], edit: Edit, path: str) -> int:
    """The one exact hit a hint or anchor singles out (offsets to lines counted incrementally)."""
    starts, line, prev = [], 0, 0
    for h in hits:
        line += text.count("\n", prev, h)
        starts.append(line)
        prev = h
    cands = [_Candidate(st, st + len(S), []) for st in starts]
    chosen = _choose(_Doc(text), cands, edit, "exact", path)
    return hits[cands.index(chosen)]


def _splice(text: str, at: int, S: list[str], R: list[str]) -> EditResult:
    end = at + sum(len(s) + 1 for s in S)
    new = "\n".join(R) + "\n" if R else ""
    if end > len(text):  # the match took the last line, which has no newline
        new = new[:-1] if new else ""
        if not new and at > 0:  # deleting the last line: drop the newline before it
            at -= 1
    return EditResult(text[:at] + new + text[end:], "exact", text.count("\n", 0, at) + 1,
                      len(S), len(R))


# --- finders, one per level ------------------------------------------------------------


def _fixer(level: int, pairs: list[tuple[str, str]]) -> LineFix | None:
    """The fix-up applied to new lines given the level and the aligned (search, file) lines."""
    fixes: list[LineFix] = [trailing_fix(pairs)]
    if level >= LEVELS.index("indentation"):
        nonblank = [p for p in pairs if p[0].strip()]
        reindent = (fit_indent(nonblank) or fit_indent(structural(nonblank))) if pairs else identity
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
        for start in _window_starts(doc, fn, [fn(s) for s in S]):
            pairs = list(zip(S, doc.lines[start:start + len(S)], strict=True))
            fix = _fixer(rank, pairs)
            if fix is not None:
                out.append(_Candidate(start, start + len(S),
                                      [(start + i, start + i + 1) for i in range(len(S))], fix,
                                      scaled_levels(pairs)))
        return out

    return find


def _anchor(doc: _Doc, fn: KeyFn, keys: list[str]) -> int | None:
    """The search line to look for with str.find: its key is a substring of any matching line
    (folded lines aside, see `_anchor_lines`). None when all keys are empty."""
    k = max(range(len(keys)), key=lambda i: len(keys[i]))
    return k if keys[k] else None


def _anchor_lines(doc: _Doc, fn: KeyFn, key: str) -> list[int]:
    """Lines that may match `key` under `fn`: those containing it, and under folding also
    the non-ASCII lines, whose folded form may contain it when their raw text does not."""
    found = doc.lines_containing(key)
    if fn is key_fold and not doc.ascii:
        found = sorted(set(found) | set(doc.non_ascii_lines()))
    return found


def _window_starts(doc: _Doc, fn: KeyFn, keys: list[str]) -> list[int]:
    """Lines where `keys` match consecutive file lines, checking only lines holding the anchor."""
    k = _anchor(doc, fn, keys)
    if k is None:
        return doc.find(fn, keys)
    n, total = len(keys), len(doc.lines)
    starts = [a - k for a in _anchor_lines(doc, fn, keys[k]) if 0 <= a - k <= total - n]
    return [st for st in starts
            if all(fn(doc.lines[st + i]) == keys[i] for i in range(n))]


def _nonblank_runs(doc: _Doc, keys: list[str]) -> list[list[int]]:
    """File lines matching `keys` in order with blank lines skipped, found from an anchor line."""
    k = _anchor(doc, key_fold, keys)
    if k is None:
        rows = doc.index(key_fold, True)[0]
        return [rows[p:p + len(keys)] for p in doc.find(key_fold, keys, nonblank=True)]
    lines, out = doc.lines, []
    for a in _anchor_lines(doc, key_fold, keys[k]):
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


def _piece_matches(doc: _Doc, S: list[str], idx: list[int]) -> list[tuple[int, int, dict[int, Span]]]:
    """Where the search lines `idx` (blank lines ignored) occur: (start, end, alignment)."""
    nonblank = [i for i in idx if key_fold(S[i])]
    if not nonblank:
        return []
    out = []
    for files in _nonblank_runs(doc, [key_fold(S[i]) for i in nonblank]):
        align: dict[int, Span] = {}
        for si, fi in zip(nonblank, files, strict=True):
            align[si] = (fi, fi + 1)
        # Blank search lines between two matched lines pair up with the file's blank lines there.
        for (s0, f0), (s1, f1) in zip(zip(nonblank, files, strict=True),
                                      zip(nonblank[1:], files[1:], strict=False), strict=False):
            # From the end of the gap: a blank line the search lost is then the first of the
            # file's run, so the run stays together and new lines go before or after it.
            for si, fi in zip(reversed(range(s0 + 1, s1)), reversed(range(f0 + 1, f1)), strict=False):
                align[si] = (fi, fi + 1)
        # Blank lines at either end pair up with blank file lines just outside the match.
        lo, hi = files[0], files[-1] + 1
        for si in range(nonblank[0] - 1, idx[0] - 1, -1):
            if lo == 0 or doc.lines[lo - 1].strip():
                break
            lo -= 1
            align[si] = (lo, lo + 1)
        for si in range(nonblank[-1] + 1, idx[-1] + 1):
            if hi >= len(doc.lines) or doc.lines[hi].strip():
                break
            align[si] = (hi, hi + 1)
            hi += 1
        out.append((lo, hi, align))
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
    fix = _fixer(rank, pairs)
    if fix is None:
        return None
    return _Candidate(start, end, [align.get(i) for i in range(len(S))], fix, scaled_levels(pairs))


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


def fuzzy_scan(doc: _Doc, S: list[str], cutoff: float = 0.0) -> _Scan | None:
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
    scan = _Scan(best, rows[bp], rows[bq - 1] + 1, runner[0], rows[runner[1]] if runner[1] >= 0 else -1)
    doc.scans[token] = scan
    return scan


def _fuzzy(doc: _Doc, S: list[str], R: list[str]) -> list[_Candidate]:
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
    fix = _fixer(LEVELS.index("unicode"), exact_pairs)
    if fix is None:
        return []
    return [_Candidate(scan.start, scan.end, [align.get(i) for i in range(len(S))], fix,
                       scaled_levels(exact_pairs))]


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
    for anchor in anchors:
        want = key_fold(anchor)
        if not want:
            continue
        found = (i + 1 for i in _anchor_lines(doc, key_fold, want)
                 if i >= pos and key_fold(doc.lines[i]).startswith(want))
        pos = next(found, -1)
        if pos < 0:
            return None
    return pos


def _choose(doc: _Doc, cands: list[_Candidate], edit: Edit, level: str, path: str) -> _Candidate:
    if len(cands) == 1:
        return cands[0]
    pool = cands
    if edit.anchors:
        pos = _anchor_position(doc, edit.anchors)
        # The anchor precedes the change, which may put it inside the search's own context.
        after = [c for c in pool if pos is not None and c.end >= pos]
        pool = after or pool
    if len(pool) > 1 and edit.hint_line is not None:
        hint = edit.hint_line - 1
        near = sorted(pool, key=lambda c: abs(c.start - hint))
        best = abs(near[0].start - hint)
        if best <= HINT_SLACK and abs(near[1].start - hint) > best:
            pool = near[:1]
    if len(pool) > 1 and edit.at_eof:
        pool = [c for c in pool if c.end == len(doc.lines)] or pool
    if len(pool) == 1:
        return pool[0]
    raise _ambiguous(path, [c.start + 1 for c in pool], level)


Opcode = tuple[str, int, int, int, int]


def _opcodes(S: list[str], R: list[str], elided: bool) -> list[Opcode]:
    """How R differs from S; with elision, the i-th '...' of each side is pinned together."""
    if not elided:
        return _slide_blank_inserts(list(SequenceMatcher(None, S, R, autojunk=False).get_opcodes()), R)
    cuts_s = [-1, *(i for i, x in enumerate(S) if is_marker(x)), len(S)]
    cuts_r = [-1, *(j for j, x in enumerate(R) if is_marker(x)), len(R)]
    ops: list[Opcode] = []
    for k in range(len(cuts_s) - 1):
        a, b = cuts_s[k] + 1, cuts_s[k + 1]
        c, d = cuts_r[k] + 1, cuts_r[k + 1]
        for tag, i1, i2, j1, j2 in SequenceMatcher(None, S[a:b], R[c:d], autojunk=False).get_opcodes():
            ops.append((tag, a + i1, a + i2, c + j1, c + j2))
        if b < len(S):
            ops.append(("equal", b, b + 1, d, d + 1))
    return ops


def _slide_blank_inserts(ops: list[Opcode], R: list[str]) -> list[Opcode]:
    """Move inserted lines below equal blank lines, as git places them.

    An insertion that starts with a blank line followed by an equal blank line can be read
    either way; the file's blank lines the search lost then stay with their run.
    """
    out: list[Opcode] = []
    k = 0
    while k < len(ops):
        tag, i1, _, j1, j2 = ops[k]
        nxt = ops[k + 1] if k + 1 < len(ops) else None
        if tag == "insert" and nxt is not None and nxt[0] == "equal":
            moved = 0
            while (j1 + moved < j2 and nxt[1] + moved < nxt[2] and not R[j1 + moved].strip()
                   and not R[j2 + moved].strip()):
                moved += 1
            if moved:
                out.append(("equal", i1, i1 + moved, j1, j1 + moved))
                out.append(("insert", i1 + moved, i1 + moved, j1 + moved, j2 + moved))
                rest = ("equal", nxt[1] + moved, nxt[2], nxt[3] + moved, nxt[4])
                if rest[1] < rest[2]:
                    out.append(rest)
                k += 2
                continue
        out.append(ops[k])
        k += 1
    return out


def _patch(doc: _Doc, cand: _Candidate, S: list[str], R: list[str], level: str) -> list[str]:
    """The new lines for the candidate's window: file lines where the edit keeps them."""
    if level == "exact":
        return list(R)
    lines, out, p = doc.lines, [], cand.start
    elided = level == "elision"
    for tag, i1, i2, j1, j2 in _opcodes(S, R, elided):
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
        for j in range(j1, j2):
            out.append(_fix_new(cand, R, j, out))
    out.extend(lines[p:cand.end])
    return out


def _fix_new(cand: _Candidate, R: list[str], j: int, out: list[str]) -> str:
    """A new line fitted to the file.

    Under a scaled indent (say 2 -> 4 spaces), a continuation line the model aligned under
    the previous line's open bracket is aligned under the same bracket in the file's text.
    """
    line = cand.fix(R[j])
    width = columns(lead(R[j]))
    if cand.levels is not None and out and j > 0 and width not in cand.levels:
        theirs = aligned_prefix(R[j - 1])
        ours = aligned_prefix(out[-1])
        if theirs is not None and ours is not None and columns(theirs) == width:
            return ours + line.lstrip()
    return line


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
    if scan.best >= FUZZY_MIN and scan.runner_start >= 0 and scan.best - scan.runner_up < FUZZY_MARGIN:
        second = (f"\n(The region at line {scan.runner_start + 1} is {scan.runner_up:.0f}% similar "
                  "too, so neither was edited.)")
    return (f"The closest region is lines {scan.start + 1}-{scan.end} "
            f"({scan.best:.0f}% similar):\n{body}{more}{second}")
