"""The grep tool: ripgrep when its binary is installed, a Python scan otherwise."""

from __future__ import annotations

import fnmatch
import os
import re
import shutil
import subprocess

from pydantic import Field

from codeloop.errors import PathOutsideWorkspace
from codeloop.tools.base import Observation, Tool, ToolArgs, ToolContext
from codeloop.tools.visibility import visible

MAX_MATCHES = 200
_SKIP_DIRS = {".git", "node_modules", "__pycache__", ".venv", ".tox"}


class GrepArgs(ToolArgs):
    pattern: str = Field(description="Regular expression (Rust/Python regex syntax).")
    path: str = Field(".", description="File or directory to search, relative to the repo root.")
    glob: str | None = Field(None, description="Only files whose path matches, e.g. '*.py'.")
    ignore_case: bool = False


def _rg(args: GrepArgs, rel: str, cwd: str, rg: str) -> tuple[list[str], str | None]:
    cmd = [rg, "--line-number", "--no-heading", "--color", "never", "--max-columns", "300",
           "--max-count", str(MAX_MATCHES + 1)]  # one more than shown reveals truncation
    if args.ignore_case:
        cmd.append("--ignore-case")
    if args.glob:
        cmd += ["--glob", args.glob]
    cmd += ["-e", args.pattern, "--", rel]
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, timeout=60, check=False)
    if proc.returncode == 2 and not proc.stdout:
        return [], proc.stderr.decode("utf-8", "replace").strip()
    return proc.stdout.decode("utf-8", "replace").splitlines(), None


def _python_grep(args: GrepArgs, rel: str, cwd: str) -> tuple[list[str], str | None]:
    try:
        regex = re.compile(args.pattern, re.IGNORECASE if args.ignore_case else 0)
    except re.error as exc:
        return [], f"invalid regular expression: {exc}"
    target = os.path.join(cwd, rel)
    files = [target] if os.path.isfile(target) else []
    for dirpath, dirnames, filenames in os.walk(target):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS)
        files.extend(os.path.join(dirpath, f) for f in sorted(filenames))
    out: list[str] = []
    for full in files:
        name = os.path.relpath(full, cwd)
        if args.glob and not fnmatch.fnmatch(name, args.glob) and not fnmatch.fnmatch(
            os.path.basename(name), args.glob
        ):
            continue
        try:
            with open(full, "rb") as fh:
                data = fh.read(2_000_000)
        except OSError:
            continue
        if b"\x00" in data[:8192]:
            continue
        for n, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
            if regex.search(line):
                out.append(f"{name}:{n}:{line[:300]}")
                if len(out) >= MAX_MATCHES * 5:
                    return out, None
    return out, None


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
        rg = shutil.which("rg")
        lines, error = _rg(args, rel, cwd, rg) if rg else _python_grep(args, rel, cwd)
        if error:
            return Observation(ok=False, error=error)
        lines = visible(ctx, [line.removeprefix("./") for line in lines],
                        lambda line: line.split(":", 1)[0])
        if not lines:
            return Observation(ok=True, output="no matches")
        truncated = len(lines) > MAX_MATCHES
        shown = lines[:MAX_MATCHES]
        note = (f"\n[{len(lines)} matches, first {MAX_MATCHES} shown; narrow the pattern, path "
                "or glob]") if truncated else ""
        return Observation(ok=True, output="\n".join(shown) + note, truncated=truncated,
                           data={"matches": len(lines)})
