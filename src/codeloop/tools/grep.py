"""The grep tool: ripgrep when its binary is found (`index.ripgrep`), a Python scan otherwise.

A pattern spanning lines (a pasted block of code) is searched across lines: first as the
literal text it is, then, if that finds nothing, as a multi-line regular expression.

Neither follows a link: ripgrep is told `--no-follow` and is handed only a path checked to
be a real file or directory (it would follow a link named on its command line), and the
Python scan reads through `SafeRoot`.
"""

from __future__ import annotations

import fnmatch
import os
import re
import stat
import subprocess

from pydantic import Field

from codeloop.errors import PathOutsideWorkspace
from codeloop.index.ripgrep import find_ripgrep
from codeloop.tools.base import Observation, Tool, ToolArgs, ToolContext
from codeloop.tools.visibility import visible
from codeloop.workspace.errors import UnsafePath
from codeloop.workspace.hostfs import Entry, SafeRoot

MAX_MATCHES = 200
_MAX_FILE_BYTES = 2_000_000
_SKIP_DIRS = {".git", "node_modules", "__pycache__", ".venv", ".tox"}


class GrepArgs(ToolArgs):
    pattern: str = Field(description="Regular expression (Rust/Python regex syntax); a pattern "
                         "with a newline is searched across lines, as literal text first.")
    path: str = Field(".", description="File or directory to search, relative to the repo root.")
    glob: str | None = Field(None, description="Only files whose path matches, e.g. '*.py'.")
    ignore_case: bool = False


def _multiline(pattern: str) -> bool:
    """Whether the pattern spans lines: a newline in it, or `\\n` in a regex."""
    return "\n" in pattern or "\\n" in pattern


def _rg(args: GrepArgs, rel: str, cwd: str, rg: str,
        literal: bool = False) -> tuple[list[str], str | None]:
    # --no-config: the output is parsed, so a user's ripgrep config must not change its shape.
    # --max-count is one more than is shown: the extra match reveals truncation.
    cmd = [rg, "--no-config", "--line-number", "--no-heading", "--color", "never",
           "--max-columns", "300", "--no-follow", "--max-count", str(MAX_MATCHES + 1)]
    if _multiline(args.pattern):
        # Without --multiline ripgrep refuses a pattern holding a newline.
        cmd.append("--multiline")
    if literal:
        cmd.append("--fixed-strings")
    if args.ignore_case:
        cmd.append("--ignore-case")
    if args.glob:
        cmd += ["--glob", args.glob]
    cmd += ["-e", args.pattern, "--", rel]
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, timeout=60, check=False)
    if proc.returncode == 2 and not proc.stdout:
        return [], proc.stderr.decode("utf-8", "replace").strip()
    return proc.stdout.decode("utf-8", "replace").splitlines(), None


def _skipped(entry: Entry) -> bool:
    return entry.name in _SKIP_DIRS


def _files(view: SafeRoot, rel: str, st: os.stat_result) -> list[str]:
    """The regular files to scan: `rel` itself, or those below it (links left out)."""
    if stat.S_ISREG(st.st_mode):
        return [rel]
    return [e.rel for e in view.walk(rel, skip_dir=_skipped) if e.is_file]


def _python_grep(args: GrepArgs, rel: str, view: SafeRoot, st: os.stat_result,
                 literal: bool = False) -> tuple[list[str], str | None]:
    flags = re.IGNORECASE if args.ignore_case else 0
    try:
        regex = re.compile(re.escape(args.pattern) if literal else args.pattern, flags)
    except re.error as exc:
        return [], f"invalid regular expression: {exc}"
    multiline = _multiline(args.pattern)
    out: list[str] = []
    for name in _files(view, rel, st):
        if args.glob and not fnmatch.fnmatch(name, args.glob) and not fnmatch.fnmatch(
            os.path.basename(name), args.glob
        ):
            continue
        try:
            data = view.read_bytes(name, _MAX_FILE_BYTES)
        except (OSError, UnsafePath):
            continue  # gone, or swapped for a link since the walk: never followed
        if b"\x00" in data[:8192]:
            continue
        text = data.decode("utf-8", "replace")
        lines = text.splitlines()
        numbers = _span_lines(regex, text) if multiline else (
            n for n, line in enumerate(lines, 1) if regex.search(line))
        for n in numbers:
            out.append(f"{name}:{n}:{lines[n - 1][:300]}")
            if len(out) >= MAX_MATCHES * 5:
                return out, None
    return out, None


def _span_lines(regex: re.Pattern[str], text: str) -> list[int]:
    """Every line any match covers (1-based, in order), as ripgrep's --multiline prints."""
    out: list[int] = []
    for match in regex.finditer(text):
        first = text.count("\n", 0, match.start()) + 1
        last = first + text.count("\n", match.start(), max(match.start(), match.end() - 1))
        out.extend(n for n in range(first, last + 1) if not out or n > out[-1])
    return out


class GrepTool(Tool):
    name = "grep"
    description = (
        "Search file contents with a regular expression; returns path:line:text for each match."
    )
    args_model = GrepArgs
    tier = "read"

    def run(self, args: GrepArgs, ctx: ToolContext) -> Observation:
        try:
            target = ctx.workspace.resolve(args.path)
        except PathOutsideWorkspace as exc:
            return Observation(ok=False, error=exc.message)
        cwd = str(ctx.workspace.path)
        rel = os.path.relpath(target, os.path.realpath(cwd))
        view = SafeRoot(cwd)
        st = view.lstat(rel)
        if st is None or not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
            # Absent, a special file, or reached through a link swapped in since the check.
            return Observation(ok=False, error=f"{args.path}: not a file or directory to search")
        rg = find_ripgrep()

        def search(literal: bool) -> tuple[list[str], str | None]:
            if rg:
                return _rg(args, rel, cwd, rg.path, literal)
            return _python_grep(args, rel, view, st, literal)

        how = "regex" if _multiline(args.pattern) else None
        if "\n" in args.pattern:
            # A pasted block is text, not a regex ("foo(self)" as a regex has a group).
            how = "literal"
            lines, error = search(literal=True)
            if not lines and not error:
                regex_lines, regex_error = search(literal=False)
                if regex_lines and not regex_error:
                    lines, how = regex_lines, "regex"
        else:
            lines, error = search(literal=False)
        if error:
            return Observation(ok=False, error=error)
        lines = visible(ctx, [line.removeprefix("./") for line in lines],
                        lambda line: line.split(":", 1)[0])
        engine = "ripgrep" if rg else "python"
        if not lines:
            said = ("no matches (the multi-line pattern was searched as literal text and as a "
                    "regex; line endings and indentation must match exactly: try its most "
                    "distinctive single line)") if "\n" in args.pattern else "no matches"
            return Observation(ok=True, output=said, data={"matches": 0, "engine": engine,
                                                           "multiline": how})
        truncated = len(lines) > MAX_MATCHES
        shown = lines[:MAX_MATCHES]
        note = (f"\n[{len(lines)} matches, first {MAX_MATCHES} shown; narrow the pattern, path "
                "or glob]") if truncated else ""
        return Observation(ok=True, output="\n".join(shown) + note, truncated=truncated,
                           data={"matches": len(lines), "engine": engine, "multiline": how})
