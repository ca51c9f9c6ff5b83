"""The verifier's vocabulary: a failure, one command's result, and the statuses they fold into."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Category = Literal["test", "lint", "typecheck", "security"]
FailureKind = Literal["test", "error", "build", "type", "lint", "security", "timeout", "crash"]
Severity = Literal["error", "warning", "high", "medium", "low"]

_NUMBERS = re.compile(r"\d+")


class Failure(BaseModel):
    """One thing that went wrong: a failing test, a type error, a lint or security finding."""

    model_config = ConfigDict(frozen=True)

    kind: FailureKind
    message: str
    file: str | None = None
    line: int | None = None
    test_id: str | None = None
    rule: str | None = None
    severity: Severity = "error"
    tool: str = ""
    trace: str = ""

    def base_key(self) -> str:
        """Identity across runs: the test id, else tool + file + kind + rule + message sans numbers.

        Numbers are dropped from the message because an edit above a finding shifts the line
        numbers it quotes without making it a different finding.
        """
        if self.test_id:
            return self.test_id
        message = _NUMBERS.sub("N", self.message.strip().splitlines()[0] if self.message.strip() else "")
        return f"{self.tool}:{self.file or '-'}:{self.kind}:{self.rule or '-'}:{message}"

    def location(self) -> str:
        if self.file and self.line:
            return f"{self.file}:{self.line}"
        return self.file or ""

    def headline(self) -> str:
        """One line for people and the model."""
        what = self.test_id or self.rule or self.kind
        where = self.location()
        first = self.message.strip().splitlines()[0] if self.message.strip() else ""
        parts = [what]
        if where and where not in what:
            parts.append(f"({where})")
        if first:
            parts.append(f"- {first[:300]}")
        return " ".join(parts)


class ParsedOutput(BaseModel):
    """What a parser makes of one command's output."""

    failures: list[Failure] = Field(default_factory=list)
    passed: list[str] = Field(default_factory=list)
    skipped: int = 0
    # False when the output had none of the structure the parser looks for.
    structured: bool = True


class RunResult(BaseModel):
    """One verification command as it ran: what, where, and what came of it."""

    name: str
    category: Category
    command: str
    scope: str = "full"
    exit_code: int | None = None
    duration_ms: float = 0.0
    timed_out: bool = False
    failures: list[Failure] = Field(default_factory=list)
    passed: list[str] = Field(default_factory=list)
    skipped: int = 0
    parser: str = "generic"
    # "usage" means the command could not run as asked (bad target): nothing was learned;
    # "not_run" that it ran no test at all (runner missing, nothing collected): `note` says why.
    outcome: Literal["passed", "failed", "usage", "timeout", "not_run"] = "passed"
    note: str = ""
    output_tail: str = ""
    # True when the result is an earlier run's, the workspace and command being unchanged.
    reused: bool = False

    @property
    def counts(self) -> str:
        if self.outcome == "not_run":
            return f"could not run the tests: {self.note}"
        if self.category == "test":
            return f"{len(self.passed)} passed, {len(self.failures)} failed, {self.skipped} skipped"
        return f"{len(self.failures)} finding(s)"


def keyed(failures: list[Failure]) -> dict[str, Failure]:
    """Key failures for comparison; repeats of one base key get an ordinal in line order."""
    ordered = sorted(failures, key=lambda f: (f.base_key(), f.line or 0))
    out: dict[str, Failure] = {}
    seen: dict[str, int] = {}
    for failure in ordered:
        base = failure.base_key()
        n = seen.get(base, 0)
        seen[base] = n + 1
        out[base if n == 0 else f"{base}#{n + 1}"] = failure
    return out
