"""Linters and scanners that report JSON: eslint, ruff, bandit, semgrep."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from codeloop.verify.models import Failure, ParsedOutput, Severity
from codeloop.verify.parsers.paths import relative


def _load(output: str, report: str | None) -> Any:
    """The report file when the tool wrote one, else the first JSON value in the output."""
    for text in (report, output):
        if not text or not text.strip():
            continue
        try:
            return json.loads(text)
        except ValueError:
            start = min((i for i in (text.find("["), text.find("{")) if i >= 0), default=-1)
            if start < 0:
                continue
            try:
                return json.JSONDecoder().raw_decode(text[start:])[0]
            except ValueError:
                continue
    return None


def parse_eslint(output: str, report: str | None, root: Path) -> ParsedOutput:
    data = _load(output, report)
    if not isinstance(data, list):
        return ParsedOutput(structured=False)
    return ParsedOutput(failures=[
        _eslint_failure(msg, relative(str(entry.get("filePath", "")), root))
        for entry in data for msg in entry.get("messages", [])
    ])


def _eslint_failure(msg: dict[str, Any], file: str) -> Failure:
    fatal = bool(msg.get("fatal"))
    return Failure(
        kind="build" if fatal else "lint",
        message=str(msg.get("message", "")),
        file=file,
        line=msg.get("line"),
        rule=msg.get("ruleId") or ("syntax" if fatal else None),
        severity="error" if msg.get("severity") == 2 else "warning",
        tool="eslint",
    )


def parse_ruff(output: str, report: str | None, root: Path) -> ParsedOutput:
    data = _load(output, report)
    if not isinstance(data, list):
        return ParsedOutput(structured=False)
    return ParsedOutput(failures=[_ruff_failure(item, root) for item in data])


def _ruff_failure(item: dict[str, Any], root: Path) -> Failure:
    location = item.get("location") or {}
    code = item.get("code")
    # Syntax errors: no code before ruff 0.9, "invalid-syntax" after.
    syntax = not code or code == "invalid-syntax"
    return Failure(
        kind="build" if syntax else "lint",
        message=str(item.get("message", "")),
        file=relative(str(item.get("filename", "")), root),
        line=location.get("row"),
        rule="syntax" if syntax else code,
        tool="ruff",
    )


def _security_report(output: str, report: str | None) -> dict[str, Any] | None:
    """A bandit or semgrep report: a JSON object with a `results` list; None otherwise."""
    data = _load(output, report)
    return data if isinstance(data, dict) and "results" in data else None


_BANDIT_SEVERITY: dict[str, Severity] = {"HIGH": "high", "MEDIUM": "medium", "LOW": "low"}


def parse_bandit(output: str, report: str | None, root: Path) -> ParsedOutput:
    data = _security_report(output, report)
    if data is None:
        return ParsedOutput(structured=False)
    failures = [_bandit_failure(item, root) for item in data.get("results", [])]
    failures += [
        Failure(kind="build", message=str(error.get("reason", "bandit could not scan the file")),
                file=relative(str(error.get("filename", "")), root), tool="bandit", severity="warning")
        for error in data.get("errors", [])
    ]
    return ParsedOutput(failures=failures)


def _bandit_failure(item: dict[str, Any], root: Path) -> Failure:
    return Failure(
        kind="security",
        message=f"{item.get('issue_text', '')} (confidence {str(item.get('issue_confidence', '')).lower()})",
        file=relative(str(item.get("filename", "")), root),
        line=item.get("line_number"),
        rule=f"{item.get('test_id', '')} {item.get('test_name', '')}".strip(),
        severity=_BANDIT_SEVERITY.get(str(item.get("issue_severity", "")).upper(), "low"),
        tool="bandit",
        trace=str(item.get("code", "")).rstrip(),
    )


_SEMGREP_SEVERITY: dict[str, Severity] = {"ERROR": "high", "WARNING": "medium", "INFO": "low"}


def parse_semgrep(output: str, report: str | None, root: Path) -> ParsedOutput:
    data = _security_report(output, report)
    if data is None:
        return ParsedOutput(structured=False)
    return ParsedOutput(failures=[_semgrep_failure(item, root) for item in data.get("results", [])])


def _semgrep_failure(item: dict[str, Any], root: Path) -> Failure:
    extra = item.get("extra") or {}
    return Failure(
        kind="security",
        message=str(extra.get("message", "")),
        file=relative(str(item.get("path", "")), root),
        line=(item.get("start") or {}).get("line"),
        rule=str(item.get("check_id", "")),
        severity=_SEMGREP_SEVERITY.get(str(extra.get("severity", "")).upper(), "low"),
        tool="semgrep",
        # Semgrep without a login prints "requires login" in place of the code.
        trace="" if extra.get("lines") == "requires login" else str(extra.get("lines", "")).rstrip(),
    )
