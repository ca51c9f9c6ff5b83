"""Writing an edit into the candidate window it matched: file lines kept, new lines fitted."""

from __future__ import annotations

import itertools
from difflib import SequenceMatcher

from codeloop.edit.errors import BadReplacement
from codeloop.edit.matching.base import Candidate, EditResult
from codeloop.edit.matching.choose import ambiguous
from codeloop.edit.matching.document import Document
from codeloop.edit.matching.elision import is_marker
from codeloop.edit.matching.fitting import fix_new

Opcode = tuple[str, int, int, int, int]


def apply_one(doc: Document, cand: Candidate, S: list[str], R: list[str], level: str) -> EditResult:
    new = _patch(doc, cand, S, R, level)
    lines = doc.lines[:cand.start] + new + doc.lines[cand.end:]
    return EditResult(doc.render(lines), level, cand.start + 1, cand.end - cand.start, len(new))


def apply_all(doc: Document, cands: list[Candidate], S: list[str], R: list[str], level: str,
              path: str) -> EditResult:
    cands = sorted(cands, key=lambda c: c.start)
    if any(a.end > b.start for a, b in itertools.pairwise(cands)):
        raise ambiguous(path, [c.start + 1 for c in cands], f"{level}, overlapping")
    lines, added = list(doc.lines), 0
    for cand in reversed(cands):
        new = _patch(doc, cand, S, R, level)
        lines[cand.start:cand.end] = new
        added += len(new)
    return EditResult(doc.render(lines), level, cands[0].start + 1,
                      sum(c.end - c.start for c in cands), added)


def _patch(doc: Document, cand: Candidate, S: list[str], R: list[str], level: str) -> list[str]:
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
            out.append(fix_new(cand, R, j, out))
    out.extend(lines[p:cand.end])
    return out


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
