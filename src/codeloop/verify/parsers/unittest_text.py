"""`python -m unittest -v` output: one `name (module.Class.name) ... status` line per test,
then `FAIL:` / `ERROR:` sections with their tracebacks.
"""

from __future__ import annotations

import re
from pathlib import Path

from codeloop.verify.models import Failure, ParsedOutput
from codeloop.verify.parsers.paths import relative, short_trace

# Python 3.11 prints `test_x (pkg.mod.Class.test_x)`; older versions `test_x (pkg.mod.Class)`.
_RESULT = re.compile(
    r"^(?P<name>\w+) \((?P<where>[\w.]+)\)(?:\n.*)? \.\.\. (?P<status>ok|FAIL|ERROR|skipped.*|"
    r"expected failure|unexpected success)\s*$"
)
_SECTION = re.compile(r"^(?P<kind>FAIL|ERROR): (?P<name>\w+) \((?P<where>[\w.]+)\)")
_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+)')


def _test_id(name: str, where: str) -> tuple[str, str]:
    """`tests/test_x.py::Class::name` and the file, from unittest's dotted location."""
    parts = where.split(".")
    if parts and parts[-1] == name:
        parts = parts[:-1]
    cls = parts[-1] if parts and parts[-1][:1].isupper() else ""
    module = parts[:-1] if cls else parts
    file = "/".join(module) + ".py"
    return (f"{file}::{cls}::{name}" if cls else f"{file}::{name}"), file


def parse_unittest(output: str, report: str | None, root: Path) -> ParsedOutput:
    parsed = ParsedOutput(structured=False)
    lines = output.splitlines()
    for text in lines:
        result = _RESULT.match(text)
        if not result:
            continue
        parsed.structured = True
        status = result["status"]
        test_id, _ = _test_id(result["name"], result["where"])
        if status in ("ok", "unexpected success"):
            parsed.passed.append(test_id)
        elif status.startswith("skipped") or status == "expected failure":
            parsed.skipped += 1
    for n, text in enumerate(lines):
        section = _SECTION.match(text)
        if not section:
            continue
        parsed.structured = True
        body: list[str] = []
        for following in lines[n + 1:]:
            if following.startswith(("=====", "Ran ")) or _SECTION.match(following):
                break
            body.append(following)
        test_id, file = _test_id(section["name"], section["where"])
        line = None
        for frame_text in body:
            frame = _FRAME.match(frame_text)
            if frame and not relative(frame["file"], root).startswith("/"):
                file, line = relative(frame["file"], root), int(frame["line"])
        message = next((t.strip() for t in reversed(body) if t.strip() and not set(t.strip()) <= {"-"}),
                       "failed")
        parsed.failures.append(Failure(
            kind="test" if section["kind"] == "FAIL" else "error", message=message, file=file,
            line=line, test_id=test_id, tool="unittest", trace=short_trace("\n".join(body))))
    return parsed
