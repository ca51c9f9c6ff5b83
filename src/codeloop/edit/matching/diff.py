"""How a replacement differs from its search text: the line diff the patcher follows, and
the other diffs that keep the same lines where identical lines make the choice arbitrary."""

from __future__ import annotations

from difflib import SequenceMatcher

from rapidfuzz import fuzz

from codeloop.edit.matching.elision import is_marker

Opcode = tuple[str, int, int, int, int]
# How similar (rapidfuzz ratio) a new line must be to an old one to count as replacing it.
REPLACES = 50.0


def opcodes(S: list[str], R: list[str], elided: bool) -> list[Opcode]:
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


def other_diffs(S: list[str], R: list[str], ops: list[Opcode]) -> list[list[Opcode]]:
    """Diffs keeping the same lines as `ops`, each kept line of one side paired as early or
    as late as it can be on that side (a block deleted with the blank line above it or the
    one below, say). A kept blank line pairs only with a blank line next to the same line
    (or end) on one side, so it never moves into the middle of new code."""
    kept = [(i1 + k, j1 + k) for tag, i1, i2, j1, _ in ops if tag == "equal" for k in range(i2 - i1)]
    s_kept, r_kept = [i for i, _ in kept], [j for _, j in kept]
    out: list[list[Opcode]] = []
    for early in (True, False):
        for pairs in (_pairs(s_kept, _embed(R, S, s_kept, early)),
                      _pairs(_embed(S, R, r_kept, early), r_kept)):
            if pairs is not None and pairs != kept:
                diff = _ops_from(pairs, len(S), len(R))
                if diff not in out:
                    out.append(diff)
    return out


def _pairs(s_side: list[int] | None, r_side: list[int] | None) -> list[tuple[int, int]] | None:
    return None if s_side is None or r_side is None else list(zip(s_side, r_side, strict=True))


def _embed(side: list[str], other: list[str], fixed: list[int], early: bool) -> list[int] | None:
    """Indices of `side` holding the lines other[fixed] in order, each as early (or late) as
    it can be; a blank line only where it has the same neighbour as in `other`."""
    order = range(len(fixed)) if early else range(len(fixed) - 1, -1, -1)
    step = 1 if early else -1
    out: dict[int, int] = {}
    at = 0 if early else len(side) - 1
    for k in order:
        text = other[fixed[k]]
        while 0 <= at < len(side) and (side[at] != text or (
                not text.strip() and not _same_neighbour(side, at, other, fixed[k]))):
            at += step
        if not 0 <= at < len(side):
            return None
        out[k] = at
        at += step
    return [out[k] for k in range(len(fixed))]


def _neighbours(lines: list[str], i: int) -> tuple[str | None, str | None]:
    """The nearest non-blank lines above and below line i (None at either end)."""
    up = next((lines[k] for k in range(i - 1, -1, -1) if lines[k].strip()), None)
    down = next((lines[k] for k in range(i + 1, len(lines)) if lines[k].strip()), None)
    return up, down


def _same_neighbour(a: list[str], i: int, b: list[str], j: int) -> bool:
    (a_up, a_down), (b_up, b_down) = _neighbours(a, i), _neighbours(b, j)
    return a_up == b_up or a_down == b_down


def _ops_from(pairs: list[tuple[int, int]], n: int, m: int) -> list[Opcode]:
    """Opcodes (as SequenceMatcher gives them) for kept line pairs, in order."""
    ops: list[Opcode] = []
    i = j = 0
    for si, rj in [*pairs, (n, m)]:
        if si > i or rj > j:
            tag = "replace" if si > i and rj > j else "delete" if si > i else "insert"
            ops.append((tag, i, si, j, rj))
        if si < n:
            if ops and ops[-1][0] == "equal" and ops[-1][2] == si and ops[-1][4] == rj:
                ops[-1] = ("equal", ops[-1][1], si + 1, ops[-1][3], rj + 1)
            else:
                ops.append(("equal", si, si + 1, rj, rj + 1))
        i, j = si + 1, rj + 1
    return ops


def core(old: list[str], new: list[str]) -> tuple[int, int]:
    """How far into a replaced block's `new` lines the file's unseen lines before it may go,
    and from where those after it may: the lines replacing `old` (those like one of them)
    stay in place, what the model inserted before or after them is split off, only next to
    a blank line (an unseen blank line joins a run of blank lines, not code)."""
    keys = [x.strip() for x in old if x.strip()]
    like = [j for j, x in enumerate(new)
            if x.strip() and any(fuzz.ratio(x.strip(), k) >= REPLACES for k in keys)]
    head, tail = (like[0], like[-1] + 1) if like else (len(new), 0)

    def at_blank(t: int) -> bool:
        return t in (0, len(new)) or not new[t - 1].strip() or not new[t].strip()

    return (max(t for t in range(head + 1) if at_blank(t)),
            min(t for t in range(tail, len(new) + 1) if at_blank(t)))
