"""Apply a set of file operations atomically: every edit of every file works, or none is kept.

Pure: the caller passes a reader for the current bytes and writes the returned changes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from codeloop.edit.errors import BadReplacement, EditError
from codeloop.edit.matching import LEVELS, Edit, EditResult, apply_edit
from codeloop.edit.textfile import TextFile, decode, encode, normalize_newlines

Reader = Callable[[str], bytes | None]


@dataclass(frozen=True)
class FileOp:
    """One file's part of a patch: edits to apply, a file to create or write, or a deletion."""

    path: str
    kind: Literal["update", "create", "write", "delete"]
    edits: tuple[Edit, ...] = ()
    content: str = ""
    move_to: str | None = None


@dataclass
class FileChange:
    """The outcome for one path: bytes before and after (None = absent) and how it matched."""

    path: str
    before: bytes | None
    after: bytes | None
    strategy: str
    results: list[EditResult] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return self.before != self.after


def sha(data: bytes | None) -> str | None:
    return hashlib.sha256(data).hexdigest() if data is not None else None


def apply_edits(text: str, edits: list[Edit] | tuple[Edit, ...], path: str) -> tuple[str, list[EditResult]]:
    """Apply edits in order to one file's text; line hints are shifted by earlier edits."""
    results, offset = [], 0
    for n, edit in enumerate(edits, 1):
        shifted = edit
        if edit.hint_line is not None:
            shifted = Edit(edit.search, edit.replace, edit.whole_lines, edit.replace_all,
                           max(1, edit.hint_line + offset), edit.anchors, edit.at_eof)
        try:
            result = apply_edit(text, shifted, path)
        except EditError as exc:
            if len(edits) > 1:
                exc.message = f"edit {n} of {len(edits)} in {path}: {exc.message} (no edit was applied)"
                exc.args = (exc.message,)
            raise
        if edit.hint_line is not None and not result.already_applied:
            offset = (result.start_line + result.new_lines) - (edit.hint_line + result.old_lines)
        text = result.text
        results.append(result)
    return text, results


def strategy_of(results: list[EditResult]) -> str:
    """The most lenient level any edit needed ("already_applied" if none changed anything)."""
    used = [r.strategy for r in results if not r.already_applied]
    if not used:
        return "already_applied" if results else "exact"
    return max(used, key=LEVELS.index)


class _State:
    """The in-memory view of every file the patch touches."""

    def __init__(self, read: Reader) -> None:
        self.read = read
        self.before: dict[str, bytes | None] = {}
        self.now: dict[str, bytes | None] = {}
        self.results: dict[str, list[EditResult]] = {}
        self.strategy: dict[str, str] = {}

    def get(self, path: str) -> bytes | None:
        if path not in self.now:
            self.before[path] = self.now[path] = self.read(path)
        return self.now[path]

    def put(self, path: str, data: bytes | None, strategy: str, results: list[EditResult]) -> None:
        self.get(path)
        self.now[path] = data
        self.results.setdefault(path, []).extend(results)
        old = self.strategy.get(path)
        self.strategy[path] = strategy if old is None else max(old, strategy, key=_rank)


def _rank(strategy: str) -> int:
    return LEVELS.index(strategy) if strategy in LEVELS else -1


def plan(ops: list[FileOp], read: Reader) -> list[FileChange]:
    """Validate and apply every op in memory; raise EditError (nothing to write) on any failure."""
    state = _State(read)
    for op in ops:
        _apply_op(state, op)
    return [
        FileChange(p, state.before[p], state.now[p], state.strategy.get(p, "exact"), state.results.get(p, []))
        for p in state.now
        if p in state.strategy
    ]


def _apply_op(state: _State, op: FileOp) -> None:
    current = state.get(op.path)
    if op.kind == "delete":
        if current is None:
            raise EditError(f"cannot delete {op.path}: it does not exist")
        state.put(op.path, None, "delete", [])
        return
    if op.kind in ("create", "write"):
        if op.kind == "create" and current is not None:
            existing = decode(current, op.path)
            if existing.text == normalize_newlines(op.content):
                state.put(op.path, current, "already_applied", [])
                return
            if existing.text.strip():
                raise BadReplacement(
                    f"cannot create {op.path}: it already exists",
                    "update it with an edit, or use write_file to replace its content",
                )
        like = decode(current, op.path) if current is not None else TextFile(text="")
        state.put(op.path, encode(normalize_newlines(op.content), like, op.path), "write", [])
        return
    if current is None:
        raise EditError(
            f"{op.path} does not exist",
            "check the path (relative to the repository root), or create the file with write_file",
        )
    tf = decode(current, op.path)
    text, results = apply_edits(tf.text, op.edits, op.path)
    data = encode(text, tf, op.path) if text != tf.text else current
    if op.move_to and op.move_to != op.path:
        if state.get(op.move_to) is not None:
            raise EditError(f"cannot move {op.path} to {op.move_to}: the target exists")
        state.put(op.path, None, "delete", [])
        state.put(op.move_to, data, strategy_of(results), results)
        return
    state.put(op.path, data, strategy_of(results), results)
