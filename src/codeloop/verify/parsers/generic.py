"""The fallback: find `file:line` locations in any tool's text output."""

from __future__ import annotations

import re
from pathlib import Path

from codeloop.verify.models import Failure, ParsedOutput
from codeloop.verify.parsers.paths import relative

_MAX_FAILURES = 50
_PATH = r"(?P<file>(?:[A-Za-z]:)?[\w./\\@+-]*\w\.[A-Za-z]{1,6})"
# Tried in order on each line; the first that matches wins.
_PATTERNS = [
    # gcc, flake8, mypy, go vet, eslint "unix": path:line[:col]: message
    re.compile(rf"^\s*{_PATH}:(?P<line>\d+)(?::\d+)?:?\s+(?P<msg>\S.*)$"),
    # tsc and MSBuild: path(line,col): message
    re.compile(rf"^\s*{_PATH}\((?P<line>\d+),\d+\):\s+(?P<msg>.*)$"),
    # Python tracebacks: File "path", line N, in func
    re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+)(?P<msg>.*)$'),
    # rustc: --> path:line:col
    re.compile(rf"^\s*--> {_PATH}:(?P<line>\d+)(?::\d+)?(?P<msg>)$"),
    # node stacks: at fn (path:line:col)
    re.compile(rf"^\s*at .*?\(?{_PATH}:(?P<line>\d+):\d+\)?(?P<msg>)$"),
]
_NOISE_DIRS = ("node_modules/", "site-packages/", "/usr/", "/rustc/", "<")


def parse_generic(output: str, report: str | None, root: Path) -> ParsedOutput:
    """Failures at project-local `file:line` locations; unstructured when none are found."""
    failures: list[Failure] = []
    seen: set[tuple[str, int, str]] = set()
    lines = output.splitlines()
    for index, text in enumerate(lines):
        for pattern in _PATTERNS:
            found = pattern.match(text)
            if not found:
                continue
            file = relative(found["file"], root)
            if file.startswith("/") or any(part in file for part in _NOISE_DIRS):
                break
            message = found["msg"].strip(" ,:")
            if not message and index > 0:
                message = lines[index - 1].strip()
            key = (file, int(found["line"]), message)
            if key not in seen:
                seen.add(key)
                failures.append(Failure(kind="error", file=file, line=int(found["line"]), message=message or text.strip()))
            break
        if len(failures) >= _MAX_FAILURES:
            break
    return ParsedOutput(failures=failures, structured=bool(failures))


_FLAKE8 = re.compile(r"^(?P<file>[^:\s][^:]*):(?P<line>\d+):\d+: (?P<code>[A-Z]+\d+) (?P<msg>.*)$")


def parse_flake8(output: str, report: str | None, root: Path) -> ParsedOutput:
    """flake8's default `path:line:col: CODE message` lines."""
    failures = [
        Failure(kind="lint", file=relative(m["file"], root), line=int(m["line"]), rule=m["code"],
                message=m["msg"], tool="flake8")
        for m in (_FLAKE8.match(text) for text in (report or output).splitlines())
        if m
    ]
    return ParsedOutput(failures=failures)
