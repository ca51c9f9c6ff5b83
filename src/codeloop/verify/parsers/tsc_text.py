"""`tsc --pretty false`: one `path(line,col): error TSnnnn: message` per diagnostic."""

from __future__ import annotations

import re
from pathlib import Path

from codeloop.verify.models import Failure, ParsedOutput
from codeloop.verify.parsers.paths import relative

_DIAGNOSTIC = re.compile(
    r"^(?P<file>[^\s(][^(]*)\((?P<line>\d+),\d+\): (?P<level>error|warning) (?P<code>TS\d+): (?P<msg>.*)$"
)
# Diagnostics without a file (bad tsconfig, missing lib) have no location.
_GLOBAL = re.compile(r"^(?P<level>error|warning) (?P<code>TS\d+): (?P<msg>.*)$")


def parse_tsc(output: str, report: str | None, root: Path) -> ParsedOutput:
    """Each diagnostic's continuation lines (indented) are folded into its message."""
    parsed = ParsedOutput()
    for text in output.splitlines():
        found = _DIAGNOSTIC.match(text) or _GLOBAL.match(text)
        if found is None:
            if text.startswith("  ") and parsed.failures:
                last = parsed.failures[-1]
                parsed.failures[-1] = last.model_copy(update={"message": f"{last.message}\n{text.strip()}"})
            continue
        groups = found.groupdict()
        parsed.failures.append(
            Failure(
                kind="type",
                message=found["msg"],
                file=relative(groups["file"], root) if groups.get("file") else None,
                line=int(groups["line"]) if groups.get("line") else None,
                rule=found["code"],
                severity="error" if found["level"] == "error" else "warning",
                tool="tsc",
            )
        )
    return parsed
