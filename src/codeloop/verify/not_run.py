"""Telling a test run that never got to run a test from one whose tests failed.

Such a run (the runner is not installed, the command is not found, nothing was collected,
no test file imports) says nothing about the edits: it is never a pass, never a fix, and
verification must say plainly that it could not run the tests, and why.
"""

from __future__ import annotations

import re

from codeloop.sandbox.base import CommandResult
from codeloop.verify.commands import CommandSpec
from codeloop.verify.models import Failure, ParsedOutput

_NO_MODULE = re.compile(r"^.*\bNo module named\b.*$", re.MULTILINE)
_CONFTEST = re.compile(r"^ImportError while loading conftest.*$", re.MULTILINE)
_ERROR_LINE = re.compile(r"^E\s+(.+)$", re.MULTILINE)
_NOTHING_RAN = re.compile(r"\bno tests ran\b|^Ran 0 tests\b", re.MULTILINE | re.IGNORECASE)
_MAX_REASON = 300
_NOTHING = "no tests ran: the test command found no tests"


def _last_line(output: str) -> str:
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    return lines[-1][:_MAX_REASON] if lines else ""


def _collection_error(failure: Failure) -> bool:
    """A test file that failed to import (pytest reports it under the file's own id)."""
    return failure.kind == "error" and bool(failure.test_id) and "::" not in (failure.test_id or "")


def _runner_failed(spec: CommandSpec, result: CommandResult) -> str | None:
    output = result.output
    if result.exit_code in (126, 127):
        what = "is not executable" if result.exit_code == 126 else "was not found"
        last = _last_line(output)
        return f"the test command {what} (exit {result.exit_code})" + (f": {last}" if last else "")
    conftest = _CONFTEST.search(output)
    if conftest:
        raised = _ERROR_LINE.findall(output[conftest.end():])
        return (conftest.group(0).strip().rstrip(".") + (f": {raised[-1].strip()}" if raised else ""))[:_MAX_REASON]
    missing = _NO_MODULE.search(output)
    if missing:
        return missing.group(0).strip()[:_MAX_REASON]
    return None


def could_not_run(spec: CommandSpec, result: CommandResult, parsed: ParsedOutput,
                  targeted: bool) -> str | None:
    """Why `result` ran no test at all, or None when it ran some (or is not a test run).

    A targeted run that collects nothing is a bad target instead (`usage`), and a test file
    that does not import there is a result (a test the edits are meant to make importable).
    """
    if spec.category != "test" or parsed.passed or any(f.kind == "test" for f in parsed.failures):
        return None
    if result.exit_code == 0:
        # unittest before Python 3.12 ends "Ran 0 tests ... OK" with exit 0.
        nothing = not targeted and not parsed.failures and _NOTHING_RAN.search(result.output)
        return _NOTHING if nothing else None
    if not parsed.failures:
        reason = _runner_failed(spec, result)
        if reason:
            return reason
    if targeted:
        return None
    if parsed.failures and all(_collection_error(f) for f in parsed.failures):
        first = parsed.failures[0]
        return f"no test file could be imported ({len(parsed.failures)} failed); first: {first.headline()}"[:_MAX_REASON]
    if not parsed.failures and (_NOTHING_RAN.search(result.output) or (spec.name == "pytest" and result.exit_code == 5)):
        return _NOTHING
    return None
