"""`go test -json` event streams; build errors arrive as plain text lines mixed in."""

from __future__ import annotations

import json
import posixpath
import re
from pathlib import Path

from codeloop.verify.models import Failure, ParsedOutput
from codeloop.verify.parsers.generic import parse_generic
from codeloop.verify.parsers.paths import relative, short_trace
from codeloop.workspace.hostfs import SafeRoot

# t.Errorf/t.Fatalf lines: "    calc_test.go:13: Add(2, 2) = 4, want 5"
_TEST_LOG = re.compile(r"^\s+(?P<file>[\w./-]+\.go):(?P<line>\d+): (?P<msg>.*)$")
# go <= 1.23 prints "FAIL\t<package> [build failed]" as plain text, outside the JSON stream.
_BUILD_FAILED = re.compile(r"^FAIL\s+(?P<pkg>\S+) \[(build|setup) failed\]")
# panic stack frames: "\t/abs/path/sub/sub_test.go:7 +0x2e"
_FRAME = re.compile(r"^\t(?P<file>/\S+\.go):(?P<line>\d+)")


def _module_path(root: Path) -> str | None:
    data = SafeRoot(root).read_if_file("go.mod")
    if data is None:
        return None
    found = re.search(r"^module\s+(\S+)", data.decode("utf-8", "replace"), re.MULTILINE)
    return found.group(1) if found else None


def _package_dir(package: str, module: str | None) -> str:
    if module and (package == module or package.startswith(module + "/")):
        return package[len(module) :].lstrip("/")
    return ""


def _failure_for(package: str, test: str, lines: list[str], root: Path, module: str | None) -> Failure:
    pkg_dir = _package_dir(package, module)
    file: str | None = None
    line: int | None = None
    message = ""
    for text in lines:
        logged = _TEST_LOG.match(text)
        if logged and not message:
            file = f"{pkg_dir}/{logged['file']}" if pkg_dir else logged["file"]
            line, message = int(logged["line"]), logged["msg"]
        elif text.startswith("panic: ") and not message:
            message = text.strip()
        frame = _FRAME.match(text)
        if frame and file is None:
            rel = relative(frame["file"], root)
            if not rel.startswith("/"):
                file, line = rel, int(frame["line"])
    body = [t for t in lines if not t.startswith(("=== RUN", "=== PAUSE", "=== CONT"))]
    return Failure(
        kind="test",
        message=message or "test failed",
        file=file,
        line=line,
        test_id=f"{package}::{test}",
        tool="go test",
        trace=short_trace("".join(body)),
    )


def parse_go_json(output: str, report: str | None, root: Path) -> ParsedOutput:
    """Leaf test failures, passes, and packages that failed without a failing test (builds)."""
    module = _module_path(root)
    outputs: dict[tuple[str, str], list[str]] = {}
    failed: list[tuple[str, str]] = []
    broken: list[str] = []
    parsed = ParsedOutput()
    plain: list[str] = []
    seen_event = False
    for raw in ((report or "") + "\n" + output).splitlines():
        try:
            event = json.loads(raw)
        except ValueError:
            event = None
        if not isinstance(event, dict) or "Action" not in event:
            plain.append(raw)
            build = _BUILD_FAILED.match(raw)
            if build and build["pkg"] not in broken:
                broken.append(build["pkg"])
            continue
        seen_event = True
        package, test, action = event.get("Package", ""), event.get("Test"), event["Action"]
        if action == "build-output":  # go >= 1.24 reports compiler output as events
            plain.append(str(event.get("Output", "")).rstrip("\n"))
        elif test is None:
            if action == "fail" and package not in broken:
                broken.append(package)
        elif action == "output":
            outputs.setdefault((package, test), []).append(event.get("Output", ""))
        elif action == "pass":
            parsed.passed.append(f"{package}::{test}")
        elif action == "skip":
            parsed.skipped += 1
        elif action == "fail":
            failed.append((package, test))
    # A parent test fails because a subtest did; report only the leaves.
    parents = {(p, t[:i]) for p, t in failed for i in range(len(t)) if t[i] == "/"}
    leaves = [k for k in failed if k not in parents]
    for package, test in leaves:
        parsed.failures.append(_failure_for(package, test, outputs.get((package, test), []), root, module))
    with_tests = {package for package, _ in failed}
    build_errors = parse_generic("\n".join(plain), None, root).failures
    for package in broken:
        if package in with_tests:
            continue
        pkg_dir = _package_dir(package, module)
        own = [f for f in build_errors if f.file and posixpath.dirname(f.file) == pkg_dir]
        for found in own or [Failure(kind="build", message=f"package {package} failed to build or run", file=pkg_dir or None)]:
            parsed.failures.append(found.model_copy(update={"kind": "build", "tool": "go test"}))
    parsed.structured = seen_event or bool(broken)
    return parsed
