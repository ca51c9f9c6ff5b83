"""The editing tools: str_replace edits, whole-file writes and multi-format patches."""

from __future__ import annotations

import stat
from abc import abstractmethod
from collections.abc import Callable
from typing import Any, ClassVar

from pydantic import Field

from codeloop.edit.apply import FileChange, FileOp, Reader, plan, sha
from codeloop.edit.errors import EditError
from codeloop.edit.formats import parse_patch
from codeloop.edit.matching import Edit
from codeloop.errors import CodeloopError
from codeloop.events import FileEdited
from codeloop.tools.base import Observation, Tier, Tool, ToolArgs, ToolContext
from codeloop.workspace.diffing import file_diff
from codeloop.workspace.hostfs import SafeRoot
from codeloop.workspace.paths import relative

MAX_DIFF_LINES = 80

OpsFn = Callable[[], list[FileOp]]

_STRATEGY_WORDS = {
    "exact": "matched exactly",
    "trailing_whitespace": "matched ignoring trailing whitespace",
    "indentation": "matched ignoring indentation; the replacement was re-indented",
    "unicode": "matched after normalising quotes, dashes and spaces",
    "blank_lines": "matched ignoring blank lines",
    "elision": "matched with '...' standing for unchanged lines",
    "fuzzy": "matched approximately; check the diff",
    "already_applied": "already applied; nothing changed",
}


class EditFileArgs(ToolArgs):
    path: str = Field(description="File path relative to the repository root.")
    old: str = Field(description="The exact text to replace, with enough context to be unique.")
    new: str = Field(description="The text to put in its place.")
    replace_all: bool = Field(False, description="Replace every occurrence instead of exactly one.")


class WriteFileArgs(ToolArgs):
    path: str = Field(description="File path relative to the repository root.")
    content: str = Field(description="The complete new content of the file.")


class ApplyPatchArgs(ToolArgs):
    patch: str = Field(
        description="SEARCH/REPLACE blocks, a unified diff, or a '*** Begin Patch' envelope."
    )
    path: str | None = Field(
        None, description="The file a diff or block applies to when the patch names none."
    )


class _FileOpsTool(Tool):
    """A write tool whose arguments become file operations, planned and written all or none."""

    tier: ClassVar[Tier] = "write"

    @abstractmethod
    def ops(self, args: Any) -> list[FileOp]:
        """The file operations the arguments ask for (may raise CodeloopError)."""

    def run(self, args: Any, ctx: ToolContext) -> Observation:
        return run_ops(self.name, lambda: self.ops(args), ctx)


class EditFile(_FileOpsTool):
    name: ClassVar[str] = "edit_file"
    description: ClassVar[str] = (
        "Replace `old` with `new` in one file. `old` must match exactly one place (unless "
        "replace_all); small whitespace, indentation and quote differences are tolerated."
    )
    args_model: ClassVar[type[ToolArgs]] = EditFileArgs

    def ops(self, args: EditFileArgs) -> list[FileOp]:
        edit = Edit(args.old, args.new, whole_lines=False, replace_all=args.replace_all)
        return [FileOp(args.path, "update", (edit,))]


class WriteFile(_FileOpsTool):
    name: ClassVar[str] = "write_file"
    description: ClassVar[str] = (
        "Write the whole content of a file, creating it (and its folders) if needed. "
        "An existing file keeps its encoding and line endings."
    )
    args_model: ClassVar[type[ToolArgs]] = WriteFileArgs

    def ops(self, args: WriteFileArgs) -> list[FileOp]:
        return [FileOp(args.path, "write", content=args.content)]


class ApplyPatch(_FileOpsTool):
    name: ClassVar[str] = "apply_patch"
    description: ClassVar[str] = (
        "Apply a patch to one or more files, all or nothing. Accepts SEARCH/REPLACE blocks "
        "(path line, <<<<<<< SEARCH, =======, >>>>>>> REPLACE; an empty SEARCH creates a "
        "file), a unified diff, or a '*** Begin Patch' envelope with Add/Delete/Update File."
    )
    args_model: ClassVar[type[ToolArgs]] = ApplyPatchArgs

    def ops(self, args: ApplyPatchArgs) -> list[FileOp]:
        return parse_patch(args.patch, default_path=args.path)


EDIT_TOOL_TYPES: dict[str, type[_FileOpsTool]] = {
    t.name: t for t in (EditFile, WriteFile, ApplyPatch)}


def preview_diff(name: str, arguments: dict[str, Any], ctx: ToolContext) -> str:
    """The diff an edit tool's call would make, planned against the workspace without writing
    (for the person asked to approve it); raises CodeloopError when it would fail."""
    tool = EDIT_TOOL_TYPES[name]()
    args = tool.args_model.model_validate(arguments)
    changes = plan([_normalise(op, ctx) for op in tool.ops(args)], _reader(ctx))
    return "".join(file_diff(c.path, c.before, c.after) for c in changes if c.changed)


def _normalise(op: FileOp, ctx: ToolContext) -> FileOp:
    """The op with repository-relative POSIX paths (confined to the workspace)."""
    def rel(path: str) -> str:
        return relative(ctx.workspace.path, ctx.workspace.resolve(path))

    return FileOp(rel(op.path), op.kind, op.edits, op.content,
                  rel(op.move_to) if op.move_to else None)


def _reader(ctx: ToolContext) -> Reader:
    view = SafeRoot(ctx.workspace.path)

    def read(rel: str) -> bytes | None:
        st = view.lstat(relative(ctx.workspace.path, ctx.workspace.resolve(rel)))
        if st is None:
            return None
        if stat.S_ISDIR(st.st_mode):
            raise EditError(f"{rel} is a directory, not a file")
        return ctx.workspace.read(rel)

    return read


def run_ops(tool: str, make_ops: OpsFn, ctx: ToolContext) -> Observation:
    """Plan every op in memory, then write all changes; report failures without writing."""
    try:
        ops = [_normalise(op, ctx) for op in make_ops()]
        changes = plan(ops, _reader(ctx))
    except CodeloopError as exc:
        # The refusal's kind (NoMatch, AmbiguousWhitespace, ...) feeds the trajectory metrics.
        return Observation(ok=False, error=str(exc), data={"refusal": type(exc).__name__})
    try:
        _write_all(changes, ctx)
    except OSError as exc:
        return Observation(ok=False, error=f"writing failed and was rolled back: {exc}")
    for change in changes:
        if change.changed:
            ctx.emit(FileEdited(
                path=change.path, before_sha=sha(change.before), after_sha=sha(change.after),
                diff=file_diff(change.path, change.before, change.after), tool=tool,
                strategy=change.strategy,
            ))
    return Observation(ok=True, output=_report(changes), data={"files": [
        {"path": c.path, "strategy": c.strategy, "changed": c.changed,
         "before_sha": sha(c.before), "after_sha": sha(c.after)}
        for c in changes
    ]})


def _write_all(changes: list[FileChange], ctx: ToolContext) -> None:
    """Write every change; if one write fails, put back the files already written."""
    done: list[FileChange] = []
    try:
        for change in changes:
            if change.changed:
                _put(ctx, change.path, change.after)
                done.append(change)
    except OSError:
        for change in reversed(done):
            _put(ctx, change.path, change.before)
        raise


def _put(ctx: ToolContext, rel: str, data: bytes | None) -> None:
    if data is None:
        ctx.workspace.delete(rel)
    else:
        ctx.workspace.write(rel, data)


def _report(changes: list[FileChange]) -> str:
    parts = []
    for change in changes:
        words = _STRATEGY_WORDS.get(change.strategy, change.strategy)
        if change.after is None:
            parts.append(f"Deleted {change.path}.")
        elif change.before is None:
            lines = len(change.after.splitlines()) or 1
            parts.append(f"Created {change.path} ({lines} lines).")
        elif not change.changed:
            parts.append(f"{change.path}: {words}.")
        else:
            where = ", ".join(f"line {r.start_line}" for r in change.results if not r.already_applied)
            parts.append(f"Edited {change.path}" + (f" at {where}" if where else "") + f" ({words}).")
            if change.strategy != "exact":
                diff = file_diff(change.path, change.before, change.after).splitlines()
                cut = len(diff) > MAX_DIFF_LINES
                parts.append("\n".join(diff[:MAX_DIFF_LINES]) + ("\n[diff truncated]" if cut else ""))
    return "\n".join(parts)
