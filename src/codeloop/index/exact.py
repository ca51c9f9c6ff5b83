"""Exact and regex search over the live files: ripgrep when present, Python otherwise."""

from __future__ import annotations

import json
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from codeloop.errors import CodeloopError
from codeloop.index.ripgrep import find_ripgrep
from codeloop.index.walker import MAX_FILE_BYTES, is_indexable_content, walk
from codeloop.workspace.errors import UnsafePath
from codeloop.workspace.hostfs import SafeRoot

_TIMEOUT_S = 20.0


class BadPattern(CodeloopError):
    """The regular expression does not compile."""


@dataclass(frozen=True)
class LineMatch:
    path: str
    line: int
    text: str


def grep(root: Path, pattern: str, *, regex: bool = True, ignore_case: bool = False,
         limit: int = 200) -> list[LineMatch]:
    """Lines matching `pattern` in the files the walker would index, in path order."""
    rg = find_ripgrep()
    if rg is not None:
        return _ripgrep(rg.path, root, pattern, regex, ignore_case, limit)
    return _python_grep(root, pattern, regex, ignore_case, limit)


def _compile(pattern: str, regex: bool, ignore_case: bool) -> re.Pattern[str]:
    try:
        return re.compile(pattern if regex else re.escape(pattern),
                          re.IGNORECASE if ignore_case else 0)
    except re.error as exc:
        raise BadPattern(f"bad regular expression {pattern!r}: {exc}",
                         "escape special characters or pass regex=False") from exc


def _ripgrep(rg: str, root: Path, pattern: str, regex: bool, ignore_case: bool,
             limit: int) -> list[LineMatch]:
    # --no-follow: never a link's target (ripgrep's default, pinned against a config or
    # alias that adds -L); the one path argument is the root itself, which is trusted.
    args = [rg, "--json", "--no-config", "--no-follow", "--max-filesize", str(MAX_FILE_BYTES),
            "--sort", "path"]
    args += ["-i"] if ignore_case else []
    args += [] if regex else ["-F"]
    args += ["-e", pattern, "--", "."]
    try:
        proc = subprocess.run(args, cwd=root, capture_output=True, timeout=_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return _python_grep(root, pattern, regex, ignore_case, limit)
    if proc.returncode == 2 and not proc.stdout:
        _compile(pattern, regex, ignore_case)  # a Python error message for bad patterns
        raise BadPattern(f"ripgrep rejected {pattern!r}: {proc.stderr.decode(errors='replace')}")
    out: list[LineMatch] = []
    for raw in proc.stdout.splitlines():
        event = json.loads(raw)
        if event.get("type") != "match":
            continue
        data = event["data"]
        path = data["path"].get("text", "")
        text = data["lines"].get("text", "")
        out.append(LineMatch(path.removeprefix("./"), int(data["line_number"]), text.rstrip("\n")))
        if len(out) >= limit:
            break
    return out


def _python_grep(root: Path, pattern: str, regex: bool, ignore_case: bool,
                 limit: int) -> list[LineMatch]:
    compiled = _compile(pattern, regex, ignore_case)
    out: list[LineMatch] = []
    tree = SafeRoot(root)
    for entry in walk(root):
        try:
            data = tree.read_bytes(entry.rel, MAX_FILE_BYTES)
        except (OSError, UnsafePath):
            continue  # gone, or swapped for a link since the walk: never followed
        if not is_indexable_content(data):
            continue
        for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
            if compiled.search(line):
                out.append(LineMatch(entry.rel, number, line))
                if len(out) >= limit:
                    return out
    return out
