"""`cargo test` text output: per-test results, panic sites, and compiler errors."""

from __future__ import annotations

import re
from pathlib import Path

from codeloop.verify.models import Failure, ParsedOutput
from codeloop.verify.parsers.paths import relative, short_trace

_RUNNING = re.compile(r"^\s*Running (?:unittests )?(?P<src>\S+)")
_DOCTESTS = re.compile(r"^\s*Doc-tests (?P<crate>\S+)")
_RESULT = re.compile(r"^test (?P<name>.+?) \.\.\. (?P<status>ok|FAILED|ignored)")
_STDOUT_HEADER = re.compile(r"^---- (?P<name>.+?) stdout ----$")
# Rust >= 1.73: "thread 'x' (pid) panicked at src/lib.rs:20:9:" then the message lines;
# older: "thread 'x' panicked at 'message', src/lib.rs:20:9".
_PANIC_NEW = re.compile(r"^thread '.*?'(?: \(\d+\))? panicked at (?P<file>[^\s:]+):(?P<line>\d+):\d+:$")
_PANIC_OLD = re.compile(r"^thread '.*?' panicked at '(?P<msg>.*)', (?P<file>[^\s:]+):(?P<line>\d+):\d+$")
_COMPILE_ERROR = re.compile(r"^error(?:\[(?P<code>E\d+)\])?: (?P<msg>.+)$")
_ARROW = re.compile(r"^\s*--> (?P<file>[^\s:]+):(?P<line>\d+):\d+")


def _failure_detail(block: list[str], root: Path) -> tuple[str | None, int | None, str]:
    for index, text in enumerate(block):
        new = _PANIC_NEW.match(text)
        if new:
            rest = []
            for follow in block[index + 1 :]:
                if not follow.strip() or follow.startswith(("note:", "stack backtrace:")):
                    break
                rest.append(follow.rstrip())
            return relative(new["file"], root), int(new["line"]), "\n".join(rest) or "panicked"
        old = _PANIC_OLD.match(text)
        if old:
            return relative(old["file"], root), int(old["line"]), old["msg"]
    return None, None, "test failed"


def _compile_errors(lines: list[str], root: Path) -> list[Failure]:
    out: list[Failure] = []
    for index, text in enumerate(lines):
        found = _COMPILE_ERROR.match(text)
        if not found or found["msg"].startswith(("could not compile", "test failed", "aborting")):
            continue
        if re.match(r"^\d+ targets? failed", found["msg"]):
            continue
        file: str | None = None
        line: int | None = None
        for follow in lines[index + 1 : index + 4]:
            arrow = _ARROW.match(follow)
            if arrow:
                file, line = relative(arrow["file"], root), int(arrow["line"])
                break
        if file is None:
            continue
        out.append(Failure(kind="build", message=found["msg"], file=file, line=line, rule=found["code"], tool="cargo test"))
    return out


def parse_cargo(output: str, report: str | None, root: Path) -> ParsedOutput:
    """Test ids are `<test target source>::<test name>` so names repeated across targets stay apart."""
    lines = (report if report is not None else output).splitlines()
    parsed = ParsedOutput()
    target = ""
    failed_in: dict[str, str] = {}
    blocks: dict[tuple[str, str], list[str]] = {}
    current: tuple[str, str] | None = None
    seen_result = False
    for text in lines:
        running, doctests = _RUNNING.match(text), _DOCTESTS.match(text)
        if running or doctests:
            target = running["src"] if running else f"doctest:{doctests['crate'] if doctests else ''}"
            current = None
            continue
        result = _RESULT.match(text)
        if result:
            seen_result = True
            test_id = f"{target}::{result['name']}"
            if result["status"] == "ok":
                parsed.passed.append(test_id)
            elif result["status"] == "ignored":
                parsed.skipped += 1
            else:
                failed_in[result["name"]] = target
            continue
        header = _STDOUT_HEADER.match(text)
        if header:
            current = (target, header["name"])
            blocks[current] = []
            continue
        if current is not None:
            if text.strip() in ("failures:", "successes:"):
                current = None
            else:
                blocks[current].append(text)
    for name, where in failed_in.items():
        block = blocks.get((where, name), [])
        file, line, message = _failure_detail(block, root)
        parsed.failures.append(
            Failure(kind="test", message=message, file=file, line=line, test_id=f"{where}::{name}",
                    tool="cargo test", trace=short_trace("\n".join(block)))
        )
    parsed.failures.extend(_compile_errors(lines, root))
    parsed.structured = seen_result or bool(parsed.failures)
    return parsed
