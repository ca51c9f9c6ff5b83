"""sympy's own test runner (`bin/test --verbose`, sympy.utilities.runtests) as used by old sympy.

Per file a `path[count]` header, then one `name [reason] status` line per test; failures
and exceptions follow as sections headed `____ path:name ____`.
"""

from __future__ import annotations

import re
from pathlib import Path

from codeloop.verify.models import Failure, ParsedOutput
from codeloop.verify.parsers.paths import relative, short_trace

_FILE = re.compile(r"^(?P<file>\S+\.py)\[\d+\]")
_RESULT = re.compile(r"^(?P<name>test_\w+)(?: .*?)? (?P<status>ok|F|E|f|X|s|w|T)(?:\s+\[(?:OK|FAIL)\])?\s*$")
_SECTION = re.compile(r"^_+ (?P<file>\S+\.py):(?P<name>\w+) _+$")
_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+)')
# f: expected failure, s/w: skipped (w: slow), X: passed though expected to fail.
_PASSING = {"ok", "X"}
_SKIPPED = {"f", "s", "w"}


def _sections(lines: list[str]) -> dict[tuple[str, str], list[str]]:
    out: dict[tuple[str, str], list[str]] = {}
    current: list[str] | None = None
    for text in lines:
        header = _SECTION.match(text)
        if header:
            current = out.setdefault((header["file"], header["name"]), [])
        elif current is not None and (set(text.strip()) <= {"_"} or text.lstrip().startswith(("tests finished", "===="))):
            current = None
        elif current is not None:
            current.append(text)
    return out


def parse_sympy(output: str, report: str | None, root: Path) -> ParsedOutput:
    lines = output.splitlines()
    parsed = ParsedOutput(structured=False)
    file = ""
    failed: list[tuple[str, str, str]] = []
    for text in lines:
        header = _FILE.match(text)
        if header:
            file, parsed.structured = header["file"], True
            continue
        result = _RESULT.match(text)
        if not result or not file:
            continue
        status, test_id = result["status"], f"{file}::{result['name']}"
        if status in _PASSING:
            parsed.passed.append(test_id)
        elif status in _SKIPPED:
            parsed.skipped += 1
        else:
            failed.append((file, result["name"], status))
    sections = _sections(lines)
    for test_file, name, status in failed:
        body = sections.get((test_file, name), [])
        where, line = test_file, None
        for text in body:
            frame = _FRAME.match(text)
            if frame and not relative(frame["file"], root).startswith("/"):
                where, line = relative(frame["file"], root), int(frame["line"])
        message = next((t.strip() for t in reversed(body) if t.strip()), "timed out" if status == "T" else "failed")
        parsed.failures.append(
            Failure(kind="test" if status == "F" else "timeout" if status == "T" else "error",
                    message=message, file=where, line=line, test_id=f"{test_file}::{name}",
                    tool="sympy bin/test", trace=short_trace("\n".join(body)))
        )
    return parsed
