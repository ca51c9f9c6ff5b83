"""Per-test status from test-run output: pytest's `-rA` summary and sympy's `bin/test`."""

from __future__ import annotations

import re
from typing import Literal

Status = Literal["PASSED", "FAILED", "ERROR", "SKIPPED", "XFAIL", "XPASS"]
PASSING: frozenset[str] = frozenset({"PASSED", "XFAIL"})
_PYTEST_STATUSES = ("PASSED", "FAILED", "ERROR", "SKIPPED", "XFAIL", "XPASS")
_SYMPY_MARKS: dict[str, Status] = {
    "ok": "PASSED", "F": "FAILED", "E": "ERROR", "f": "XFAIL", "s": "SKIPPED", "w": "SKIPPED",
}
_SYMPY_FAILURE_HEADER = re.compile(r"^_+ (\S+\.py):(\S+) _+$")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _pytest_test_id(rest: str) -> str:
    """The test id at the start of a summary line, without pytest's ` - message` tail."""
    first = rest.split(" ", 1)[0]
    if "[" in first and not first.endswith("]"):
        # A parametrized id with spaces inside its brackets: it ends at a "]" followed by the
        # end of the line or by the message separator.
        for pos, char in enumerate(rest):
            if char == "]" and (pos + 1 == len(rest) or rest.startswith(" - ", pos + 1)):
                return rest[: pos + 1]
    return rest.split(" - ", 1)[0].strip() if "[" in first else first


# `pytest -v` per-test lines, `path::name STATUS` (then a percentage or nothing). pytest
# before 3.6 (astropy 1.3's 3.3) prints no summary line for passed tests even with `-rA`.
_PYTEST_VERBOSE = re.compile(r"^(\S+?::.+?) (PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)(?:\s+\[[ \d]+%\])?$")


def parse_pytest(output: str) -> dict[str, Status]:
    """Statuses from the `short test summary info` lines that `pytest -rA` prints, and from
    `-v` per-test lines (which the summary, printed last, overrides)."""
    statuses: dict[str, Status] = {}
    for raw in output.splitlines():
        line = _ANSI.sub("", raw).rstrip()
        verbose = _PYTEST_VERBOSE.match(line)
        if verbose:
            statuses[verbose.group(1)] = verbose.group(2)  # type: ignore[assignment]
            continue
        word, _, rest = line.partition(" ")
        if word not in _PYTEST_STATUSES or not rest or rest.startswith("["):
            continue  # "SKIPPED [1] file:line: reason" names no test id
        test_id = _pytest_test_id(rest)
        statuses[test_id] = word  # type: ignore[assignment]
        if " " in test_id:
            # The published FAIL_TO_PASS / PASS_TO_PASS lists cut such ids at the first space
            # (the harness splits summary lines on whitespace); answer to that name as well.
            statuses[test_id.split(" ", 1)[0]] = word  # type: ignore[assignment]
    return statuses


def parse_sympy(output: str) -> dict[str, Status]:
    """Statuses from `bin/test --verbose` lines (`test_name ok|F|E|f|s`) and failure headers."""
    statuses: dict[str, Status] = {}
    for raw in output.splitlines():
        line = _ANSI.sub("", raw).strip()
        header = _SYMPY_FAILURE_HEADER.match(line)
        if header:
            statuses.setdefault(header.group(2), "FAILED")
            continue
        if not line.startswith("test_"):
            continue
        # The file's last test line also carries the file's verdict, "[OK]" or "[FAIL]".
        parts = re.sub(r"\s+\[(OK|FAIL)\]$", "", line).split()
        if len(parts) >= 2 and parts[-1] in _SYMPY_MARKS:
            statuses[parts[0]] = _SYMPY_MARKS[parts[-1]]
    return statuses


def parse_output(runner: str, output: str) -> dict[str, Status]:
    return parse_sympy(output) if runner == "sympy" else parse_pytest(output)


_NETWORK_ERRORS = re.compile(
    r"ConnectionError|gaierror|Name or service not known|Temporary failure in name resolution"
    r"|Network is unreachable|Max retries exceeded|ProxyError|nodename nor servname"
    r"|ConnectTimeout|ReadTimeout|httpbin\.org",
)


def network_failures(output: str) -> set[str]:
    """Tests whose pytest summary line blames the network (unreachable from here)."""
    found: set[str] = set()
    for raw in output.splitlines():
        line = _ANSI.sub("", raw).rstrip()
        word, _, rest = line.partition(" ")
        if word in ("FAILED", "ERROR") and _NETWORK_ERRORS.search(rest):
            test_id = _pytest_test_id(rest)
            found.update({test_id, test_id.split(" ", 1)[0]})
    return found
