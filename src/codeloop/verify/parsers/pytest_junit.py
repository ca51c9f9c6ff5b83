"""pytest's JUnit XML (written with `-o junit_family=xunit1`, which records file and line)."""

from __future__ import annotations

import posixpath
import re
import xml.etree.ElementTree as ET
from pathlib import Path

from codeloop.verify.models import Failure, ParsedOutput
from codeloop.verify.parsers.paths import relative, short_trace

# pytest ends a long failure report with the crash site: "tests/test_x.py:12: AssertionError".
_CRASH_SITE = re.compile(r"^(?P<file>[^\s:][^:\n]*\.py):(?P<line>\d+): (?P<what>.*)$", re.MULTILINE)


def _test_id(case: ET.Element, root: Path) -> tuple[str, str | None]:
    name = case.get("name", "")
    classname = case.get("classname", "")
    file = case.get("file")
    if not file:
        return (f"{classname}::{name}" if classname else name), None
    rel = relative(file, root)
    module = rel.removesuffix(".py").replace("/", ".")
    if not classname and name.endswith(posixpath.basename(module)):
        return rel, rel  # a module that failed to collect
    rest = classname[len(module) :].lstrip(".") if classname.startswith(module) else ""
    parts = [rel, *([p for p in rest.split(".") if p] if rest else []), name]
    return "::".join(parts), rel


def parse_junit(output: str, report: str | None, root: Path) -> ParsedOutput:
    """Failures and passes from the JUnit report; `output` is only used when there is none."""
    if not report or not report.strip():
        return ParsedOutput(structured=False)
    try:
        tree = ET.fromstring(report)
    except ET.ParseError:
        return ParsedOutput(structured=False)
    parsed = ParsedOutput()
    for case in tree.iter("testcase"):
        test_id, file = _test_id(case, root)
        problem = case.find("failure")
        if problem is None:
            problem = case.find("error")
        if case.find("skipped") is not None and problem is None:
            parsed.skipped += 1
            continue
        if problem is None:
            parsed.passed.append(test_id)
            continue
        text = problem.text or ""
        # pytest's "E   " lines carry the exception; better than "collection failure".
        raised = [t[1:].strip() for t in text.splitlines() if t.startswith("E ")]
        message = problem.get("message") or ""
        if raised and message in ("", "collection failure"):
            message = "\n".join(raised[-3:])
        message = message or problem.tag
        line: int | None = None
        sites = list(_CRASH_SITE.finditer(text))
        if sites:
            site = sites[-1]
            file, line = relative(site["file"], root), int(site["line"])
        elif case.get("line") is not None:
            line = int(case.get("line", "0")) + 1  # pytest writes 0-based lines
        parsed.failures.append(
            Failure(
                kind="test" if problem.tag == "failure" else "error",
                message=message,
                file=file,
                line=line,
                test_id=test_id,
                tool="pytest",
                trace=short_trace(text),
            )
        )
    return parsed
