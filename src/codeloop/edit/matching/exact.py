"""The fast exact paths: a substring (str_replace semantics) or whole lines found by str.find."""

from __future__ import annotations

import itertools

from codeloop.edit.matching.base import Candidate, Edit, EditResult
from codeloop.edit.matching.choose import ambiguous, choose
from codeloop.edit.matching.document import Document


def replace_substring(text: str, search: str, replace: str, edit: Edit,
                      path: str) -> EditResult | None:
    """Replace `search` where it occurs as a substring; None when it does not occur."""
    hits, at = [], text.find(search)
    while at != -1:
        hits.append(at)
        at = text.find(search, at + 1)
    if not hits:
        return None
    if len(hits) > 1 and not edit.replace_all:
        lines = [text.count("\n", 0, h) + 1 for h in hits]
        raise ambiguous(path, lines, "exact")
    if edit.replace_all:
        if any(b - a < len(search) for a, b in itertools.pairwise(hits)):
            raise ambiguous(path, [text.count("\n", 0, h) + 1 for h in hits], "exact (overlapping)")
        new_text = text.replace(search, replace)
    else:
        new_text = text[: hits[0]] + _indent_like_hit(text, hits[0], search, replace) + text[hits[0] + len(search):]
    return EditResult(new_text, "exact", text.count("\n", 0, hits[0]) + 1,
                      search.count("\n") + 1, replace.count("\n") + 1)


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


def line_hits(text: str, S: list[str]) -> list[int]:
    """Character offsets where the lines S occur whole in `text` (the fast exact path)."""
    hay = text if text.endswith("\n") else text + "\n"
    pattern = "\n".join(S) + "\n"
    hits, at = [], hay.find(pattern)
    while at != -1:
        if at == 0 or hay[at - 1] == "\n":
            hits.append(at)
        at = hay.find(pattern, at + 1)
    return hits


def choose_hit(text: str, hits: list[int], S: list[str], edit: Edit, path: str) -> int:
    """The one exact hit a hint or anchor singles out (offsets to lines counted incrementally)."""
    starts, line, prev = [], 0, 0
    for h in hits:
        line += text.count("\n", prev, h)
        starts.append(line)
        prev = h
    cands = [Candidate(st, st + len(S), []) for st in starts]
    chosen = choose(Document(text), cands, edit, "exact", path)
    return hits[cands.index(chosen)]


def splice(text: str, at: int, S: list[str], R: list[str]) -> EditResult:
    """Put the lines R in place of the lines S found whole at offset `at`."""
    end = at + sum(len(s) + 1 for s in S)
    new = "\n".join(R) + "\n" if R else ""
    if end > len(text):  # the match took the last line, which has no newline
        new = new[:-1] if new else ""
        if not new and at > 0:  # deleting the last line: drop the newline before it
            at -= 1
    return EditResult(text[:at] + new + text[end:], "exact", text.count("\n", 0, at) + 1,
                      len(S), len(R))
