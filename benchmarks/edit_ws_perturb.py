"""Whitespace perturbations of a gold hunk for benchmarks/edit_apply.py, and their oracle.

Two ways a model's edit gets the file's whitespace wrong without meaning to change it:

- `blank_run`: the search omits one blank line of a run of two or more (a context blank
  line where the run has one, so the replacement loses it too; else a deleted one).
- `two_space`: the model writes the hunk with 2-space indentation while the file uses 4,
  and it keeps continuation lines aligned under their open bracket, as people do, so
  those lines move by their bracket line's shift rather than being halved. Only hunks
  with such a line at a width that is not a multiple of 4 count; hunks with lines at
  other odd widths (a docstring's list, say) are left out, as a 2-space rewrite puts them
  on block widths and no reader could map them back.

The oracle for a lost blank line (`blank_run`, and `missing_blank_line` in edit_apply.py)
lists the files the model's edit can mean: read as its own diff, or with a deleted or
inserted block slid over identical context lines (diff tools differ there), the lost line
put back anywhere in its run, kept (never splitting a replacement or an inserted block)
or, next to a deleted blank line or inside a deletion, deleted too. The gold file is one
of them. Several files mean the engine cannot know which the model meant and must
refuse. It works from the diff alone, independently of the engine.
"""

from __future__ import annotations

import zlib

from codeloop.edit.brackets import OPEN, bracket_columns

Body = list[tuple[str, str]]  # (" " | "-" | "+", text)


def _blank(text: str) -> bool:
    return not text.strip()


def _old_side(body: Body) -> list[int]:
    return [i for i, (k, _) in enumerate(body) if k != "+"]


def _new_side(body: Body) -> tuple[str, ...]:
    return tuple(t for k, t in body if k != "-")


# --- blank_run ------------------------------------------------------------------------------


def drop_blank_in_run(body: Body, seed: str) -> tuple[Body, int] | None:
    """The body without one blank line of a run of 2+ old-side blank lines, and its index.

    A context blank line is dropped where the run has one (the model lost it from both
    sides), else a deleted one. Only a line whose gold reading is one the oracle admits is
    dropped: a model that writes this hunk could have written the gold.
    """
    old = _old_side(body)
    runs: list[list[int]] = []
    for i in old:
        if _blank(body[i][1]) and runs and runs[-1][-1] == _prev_old(old, i):
            runs[-1].append(i)
        elif _blank(body[i][1]):
            runs.append([i])
    for run in (r for r in runs if len(r) >= 2):
        kept = [i for i in run if body[i][0] == " "]
        pool = [i for i in kept or run
                if _valid(body[:i] + body[i + 1:], i, body[i][0])]
        if pool:
            d = pool[zlib.crc32(seed.encode()) % len(pool)]
            return body[:d] + body[d + 1:], d
    return None


def _prev_old(old: list[int], i: int) -> int | None:
    at = old.index(i)
    return old[at - 1] if at else None


def _valid(body: Body, q: int, kind: str) -> bool:
    """Whether an unseen old line of `kind` may stand at body position `q` (before body[q])."""
    prev = body[q - 1] if q > 0 else None
    nxt = body[q] if q < len(body) else None
    pk, nk = (prev[0] if prev else None), (nxt[0] if nxt else None)
    if kind == " ":
        # Never inside an inserted block, nor between a replacement's old and new lines.
        return not (pk in ("-", "+") and nk == "+")
    next_to_deleted_blank = any(x is not None and x[0] == "-" and _blank(x[1]) for x in (prev, nxt))
    return next_to_deleted_blank or (pk == "-" and nk == "-")


def blank_readings(gold: Body, seen: Body) -> set[tuple[str, ...]]:
    """The new sides the model's edit `seen` (gold without one blank line) can mean: read as
    its own diff or with a block of it slid over identical lines, as diff tools differ."""
    d = next((i for i, (a, b) in enumerate(zip(gold, seen, strict=False)) if a != b), len(seen))
    lost = gold[d]
    old = [t for k, t in gold if k != "+"]
    out = {_new_side(gold)}
    for diff in _slides(seen):
        for q in range(len(diff) + 1):
            for kind in (" ", "-"):
                body = [*diff[:q], (kind, lost[1]), *diff[q:]]
                if [t for k, t in body if k != "+"] == old and _valid(diff, q, kind):
                    out.add(_new_side(body))
    return out


def _slides(body: Body) -> list[Body]:
    """`body` and each variant with one all-deleted or all-inserted block moved up or down
    over context lines equal to its own lines (the same change, told another way)."""
    out = [body]
    i = 0
    while i < len(body):
        kind = body[i][0]
        j = i
        while j < len(body) and body[j][0] == kind:
            j += 1
        if kind != " " and (i == 0 or body[i - 1][0] == " ") and (j == len(body) or body[j][0] == " "):
            for step in (-1, 1):
                a, b, moved = i, j, list(body)
                while True:
                    src, dst = (a - 1, b - 1) if step < 0 else (b, a)
                    if not (0 <= src < len(moved) and moved[src][0] == " "
                            and moved[src][1] == moved[dst][1]):
                        break
                    # The context line and the block's far line trade places.
                    moved[src], moved[dst] = (kind, moved[src][1]), (" ", moved[dst][1])
                    a, b = a + step, b + step
                    out.append(list(moved))
        i = j
    return out


# --- two_space -------------------------------------------------------------------------------


def _brackets(line: str) -> list[tuple[int, bool]]:
    """Bracket events of `line`: (column, hanging) for an opening, (-1, False) for a closing.

    An opening bracket is hanging when nothing but a comment follows it on its line; lines
    under it then follow the indent width, not the bracket.
    """
    return [(i, not line[i + 1:].split("#")[0].strip()) if line[i] in OPEN else (-1, False)
            for i in bracket_columns(line)]


def _push(stack: list[tuple[int, int]], line: str, shift: int) -> None:
    """Track the brackets `line` opens (column, column re-indented by `shift`) and closes;
    a hanging bracket is tracked at column -2, so no line counts as aligned under it."""
    for col, hanging in _brackets(line):
        if col >= 0:
            stack.append((-2, -2) if hanging else (col, col - shift))
        elif stack:
            stack.pop()


def _reindent_side(lines: list[str], given: dict[int, str]) -> dict[int, str] | None:
    """Each line re-indented 4 -> 2 spaces; a line aligned under an open bracket stays under
    it. `given` holds lines already re-indented (context lines seen from the other side)."""
    out: dict[int, str] = {}
    stack: list[tuple[int, int]] = []  # (column in the original, column re-indented)
    for i, line in enumerate(lines):
        width = len(line) - len(line.lstrip())
        if not line.strip():
            out[i] = line
            continue
        if "\t" in line[:width]:
            return None
        if i in given:
            new = len(given[i]) - len(given[i].lstrip())
        elif stack and any(col + 1 == width for col, _ in stack):
            new = next(n for col, n in reversed(stack) if col + 1 == width) + 1
        elif width % 4 == 0:
            new = width // 2
        else:
            # Text indented by other widths (a docstring's 2-space list, say) would land on
            # block widths: no reader could map it back, so such hunks are left out.
            return None
        shift = width - new
        out[i] = " " * new + line[width:]
        _push(stack, line, shift)
    return out


def aligned_odd(body: Body) -> bool:
    """Whether a line of the hunk sits under an open bracket at a width not a multiple of 4."""
    for side in ([t for k, t in body if k != "+"], [t for k, t in body if k != "-"]):
        stack: list[tuple[int, int]] = []
        for line in side:
            width = len(line) - len(line.lstrip())
            if line.strip() and width % 4 and any(col + 1 == width for col, _ in stack):
                return True
            _push(stack, line, 0)
    return False


def two_space(body: Body) -> Body | None:
    """The hunk re-indented 4 -> 2 spaces the way a 2-space writer would, or None when it
    has no bracket-aligned line at an odd width (or is tab-indented)."""
    if not aligned_odd(body):
        return None
    old_idx = [i for i, (k, _) in enumerate(body) if k != "+"]
    new_idx = [i for i, (k, _) in enumerate(body) if k != "-"]
    old = _reindent_side([body[i][1] for i in old_idx], {})
    if old is None:
        return None
    done = {b: old[n] for n, b in enumerate(old_idx)}
    given = {n: done[b] for n, b in enumerate(new_idx) if body[b][0] == " "}
    new = _reindent_side([body[i][1] for i in new_idx], given)
    if new is None:
        return None
    done.update({b: new[n] for n, b in enumerate(new_idx)})
    return [(k, done[i]) for i, (k, _) in enumerate(body)]
