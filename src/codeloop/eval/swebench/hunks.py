"""A gold patch as a list of find-and-replace edits, one per hunk, each unique in its file.

Applied in order, the edits turn the base files into the patched files. A hunk whose text
occurs more than once (or is empty: a pure insertion) is widened with the surrounding
lines of the file until it is unique, as a careful agent would quote more context.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from unidiff.constants import LINE_TYPE_NO_NEWLINE
from unidiff.errors import UnidiffParseError
from unidiff.patch import Hunk, Line, PatchSet

from codeloop.errors import CodeloopError

EditKind = Literal["replace", "create", "delete"]


class GoldPatchError(CodeloopError):
    """The gold patch cannot be turned into edits against the base files."""


@dataclass(frozen=True)
class PlannedEdit:
    path: str
    kind: EditKind
    old: str = ""
    new: str = ""
    # Where the hunk starts in the file as it is when this edit is made (1-based).
    line: int = 1
    # The whole file once this edit (and every one before it) is made.
    after: str = ""


@dataclass
class FilePlan:
    path: str
    edits: list[PlannedEdit] = field(default_factory=list)
    final: str = ""


def _text(lines: list[str]) -> str:
    return "".join(lines)


def _values(hunk: Hunk, keep: Callable[[Line], bool]) -> list[str]:
    """The hunk's lines that `keep` picks; a line marked "\\ No newline at end of file" loses
    the newline the diff's own layout gave it (the file ends without one)."""
    lines = list(hunk)
    out = []
    for i, line in enumerate(lines):
        if not keep(line):
            continue
        value = line.value
        following = lines[i + 1] if i + 1 < len(lines) else None
        if following is not None and following.line_type == LINE_TYPE_NO_NEWLINE:
            value = value.removesuffix("\n")
        out.append(value)
    return out


def _widen(current: list[str], start: int, old_len: int, old: list[str], new: list[str]
           ) -> tuple[list[str], list[str], int]:
    """Add one line of context on each side (where the file has one)."""
    before = current[start - 1 : start] if start > 0 else []
    after_at = start + old_len
    after = current[after_at : after_at + 1]
    return before + old + after, before + new + after, start - len(before)


def _locate(current: list[str], old: list[str], expected: int) -> int | None:
    """The start of `old` in `current` nearest to `expected` (gold hunks may be offset, as
    `git apply` allows)."""
    if not old:
        return min(expected, len(current))
    for distance in range(len(current) + 1):
        for start in (expected - distance, expected + distance):
            if 0 <= start <= len(current) - len(old) and current[start : start + len(old)] == old:
                return start
    return None


def plan_edits(patch: str, read: Callable[[str], str | None]) -> list[FilePlan]:
    """One edit per hunk of `patch`; `read(path)` gives a base file's text (None if absent)."""
    try:
        patchset = PatchSet(patch)
    except UnidiffParseError as exc:
        raise GoldPatchError(f"the gold patch is not a unified diff: {exc}") from exc
    plans: list[FilePlan] = []
    for pfile in patchset:
        path = pfile.path
        if pfile.is_added_file:
            content = _text([v for h in pfile for v in _values(h, lambda ln: ln.is_added)])
            plans.append(FilePlan(path, [PlannedEdit(path, "create", new=content, after=content)],
                                  content))
            continue
        if pfile.is_removed_file:
            plans.append(FilePlan(path, [PlannedEdit(path, "delete")], ""))
            continue
        base = read(path)
        if base is None:
            raise GoldPatchError(f"the gold patch changes {path}, which is not in the checkout")
        current = base.splitlines(keepends=True)
        plan = FilePlan(path)
        for hunk in pfile:
            old = _values(hunk, lambda ln: ln.is_context or ln.is_removed)
            new = _values(hunk, lambda ln: ln.is_context or ln.is_added)
            # Earlier hunks are already applied, so this hunk starts near its target line.
            start = _locate(current, old, max(hunk.target_start - 1, 0))
            if start is None:
                raise GoldPatchError(f"hunk at line {hunk.source_start} of {path} does not match")
            old_len = len(old)
            while (not old or _text(current).count(_text(old)) != 1) and (
                start > 0 or start + old_len < len(current)
            ):
                old, new, start = _widen(current, start, old_len, old, new)
                old_len = len(old)
            current[start : start + old_len] = new
            plan.edits.append(
                PlannedEdit(path, "replace", _text(old), _text(new), start + 1, _text(current))
            )
        plan.final = _text(current)
        plans.append(plan)
    return plans
