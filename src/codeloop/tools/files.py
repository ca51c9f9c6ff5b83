"""Reading tools: read_file and list_files, confined to the workspace."""

from __future__ import annotations

import posixpath
import stat

from pydantic import Field

from codeloop.errors import PathOutsideWorkspace
from codeloop.tools.base import Observation, Tool, ToolArgs, ToolContext
from codeloop.tools.buffers import take_in_editor_buffer
from codeloop.tools.visibility import visible
from codeloop.workspace.errors import UnsafePath
from codeloop.workspace.hostfs import SafeRoot
from codeloop.workspace.paths import relative

MAX_READ_LINES = 2000
MAX_LINE_CHARS = 2000
MAX_READ_BYTES = 5_000_000
_SKIP_DIRS = {".git", "node_modules", "__pycache__", ".venv", ".mypy_cache", ".pytest_cache",
              ".ruff_cache", ".tox"}


class ReadFileArgs(ToolArgs):
    path: str = Field(description="File path relative to the repository root.")
    start_line: int = Field(1, ge=1, description="First line to show (1-based).")
    end_line: int | None = Field(None, ge=1, description="Last line to show (inclusive).")


class ReadFileTool(Tool):
    name = "read_file"
    description = (
        "Read a text file with line numbers. Shows at most 2000 lines per call; use start_line "
        "and end_line to page through large files."
    )
    args_model = ReadFileArgs
    tier = "read"

    def run(self, args: ReadFileArgs, ctx: ToolContext) -> Observation:
        try:
            path = ctx.workspace.resolve(args.path)
        except PathOutsideWorkspace as exc:
            return Observation(ok=False, error=exc.message)
        take_in_editor_buffer(ctx, relative(ctx.workspace.path, path))
        st = SafeRoot(ctx.workspace.path).lstat(relative(ctx.workspace.path, path))
        if st is None or not stat.S_ISREG(st.st_mode):
            kind = "a directory" if st is not None and stat.S_ISDIR(st.st_mode) else "not found"
            return Observation(ok=False, error=f"{args.path}: {kind}; use list_files to look")
        if st.st_size > MAX_READ_BYTES:
            return Observation(ok=False, error=f"{args.path} is over {MAX_READ_BYTES} bytes; "
                               "use grep to find the part you need")
        try:
            data = ctx.workspace.read(args.path)
        except UnsafePath as exc:  # swapped for a link since the check: never followed
            return Observation(ok=False, error=exc.message)
        if b"\x00" in data[:8192]:
            return Observation(ok=False, error=f"{args.path} is a binary file")
        lines = data.decode("utf-8", "replace").splitlines()
        start = args.start_line
        end = min(args.end_line or len(lines), len(lines), start + MAX_READ_LINES - 1)
        if start > max(len(lines), 1):
            return Observation(ok=False, error=f"{args.path} has only {len(lines)} lines")
        width = len(str(end))
        shown = []
        for n in range(start, end + 1):
            line = lines[n - 1]
            if len(line) > MAX_LINE_CHARS:
                line = line[:MAX_LINE_CHARS] + " [line cut]"
            shown.append(f"{n:>{width}}\t{line}")
        truncated = end < len(lines)
        note = (f"\n[lines {start}-{end} of {len(lines)}; read more with start_line={end + 1}]"
                if truncated else "")
        return Observation(ok=True, output="\n".join(shown) + note, truncated=truncated,
                           data={"lines": len(lines)})


class ListFilesArgs(ToolArgs):
    path: str = Field(".", description="Directory relative to the repository root.")
    depth: int = Field(2, ge=1, le=10, description="How many directory levels to show.")


class ListFilesTool(Tool):
    name = "list_files"
    description = "List files and directories under a path, a few levels deep."
    args_model = ListFilesArgs
    tier = "read"
    max_entries = 500

    def run(self, args: ListFilesArgs, ctx: ToolContext) -> Observation:
        try:
            base = relative(ctx.workspace.path, ctx.workspace.resolve(args.path))
        except PathOutsideWorkspace as exc:
            return Observation(ok=False, error=exc.message)
        view = SafeRoot(ctx.workspace.path)
        if not view.is_dir(base):
            return Observation(ok=False, error=f"{args.path} is not a directory")
        entries: list[str] = []
        self._list(view, "" if base == "." else base, "", args.depth, entries)
        entries = visible(ctx, entries, lambda entry: posixpath.normpath(
            posixpath.join(base, entry.rstrip("/"))))
        truncated = len(entries) > self.max_entries
        shown = sorted(entries[: self.max_entries])
        note = f"\n[first {self.max_entries} entries; list a subdirectory for more]" if truncated else ""
        return Observation(ok=True, output="\n".join(shown) + note, truncated=truncated)

    def _list(self, view: SafeRoot, rel: str, prefix: str, depth: int,
              entries: list[str]) -> None:
        """Files (links as themselves, never followed) `depth` levels down; directories at
        the last level end in "/"."""
        subdirs = []
        for entry in view.scandir(rel):
            if not entry.is_dir:
                entries.append(prefix + entry.name)
            elif entry.name not in _SKIP_DIRS:
                subdirs.append(entry)
        if depth <= 1:
            entries.extend(f"{prefix}{d.name}/" for d in subdirs)
            return
        for d in subdirs:
            if len(entries) > self.max_entries:
                return
            self._list(view, d.rel, f"{prefix}{d.name}/", depth - 1, entries)
