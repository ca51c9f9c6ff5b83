"""What is known about each test and finding, and how a later state compares with the baseline."""

from __future__ import annotations

from dataclasses import dataclass, field

from codeloop.verify.models import Failure, RunResult, keyed


@dataclass(frozen=True)
class Status:
    failing: bool
    source: str
    scope: str
    failure: Failure | None = None


@dataclass
class Ledger:
    """The latest known status of every test id / finding key, folded from runs in order."""

    entries: dict[str, Status] = field(default_factory=dict)
    commands: list[str] = field(default_factory=list)

    def record(self, run: RunResult) -> None:
        if run.outcome in ("usage", "not_run"):
            return  # nothing was learned: no test ran
        if run.command not in self.commands:
            self.commands.append(run.command)
        current = keyed(run.failures)
        # Findings without a test id vanish when fixed: a completed run of the same command
        # over the same (or the full) scope that no longer reports them clears them. A run
        # that crashed or timed out did not complete: its silence fixes nothing.
        completed = not any(f.kind in ("crash", "timeout") for f in run.failures)
        for key, status in list(self.entries.items()):
            if (
                completed
                and status.failing
                and status.source == run.name
                and key not in current
                and (status.failure is None or status.failure.test_id is None)
                and run.scope in ("full", status.scope)
            ):
                self.entries[key] = Status(False, run.name, run.scope)
        for test_id in run.passed:
            self.entries[test_id] = Status(False, run.name, run.scope)
        for key, failure in current.items():
            self.entries[key] = Status(True, run.name, run.scope, failure)

    def failing(self) -> dict[str, Failure]:
        return {k: s.failure for k, s in self.entries.items() if s.failing and s.failure is not None}

    def copy(self) -> Ledger:
        return Ledger(dict(self.entries), list(self.commands))


@dataclass
class Comparison:
    """New failures (not failing at baseline), fixed ones, and those failing at both."""

    new: dict[str, Failure] = field(default_factory=dict)
    fixed: dict[str, Failure] = field(default_factory=dict)
    still_failing: dict[str, Failure] = field(default_factory=dict)
    # New failures whose key the baseline never saw (it did not run them), a subset of `new`.
    unbaselined: set[str] = field(default_factory=set)
    # Of those, the tests whose file did not even import at baseline: no run before the edits
    # can say whether they failed then (a test patch that imports a name only the fix adds).
    unimportable: set[str] = field(default_factory=set)

    def why_no_baseline(self, key: str) -> str:
        """A marker for a listed failure the baseline cannot speak for, else ""."""
        if key in self.unimportable:
            return " [no baseline possible: its file did not import before the edits]"
        return " [not covered by the baseline run]" if key in self.unbaselined else ""


def compare(baseline: Ledger, latest: Ledger) -> Comparison:
    result = Comparison()
    for key, status in latest.entries.items():
        before = baseline.entries.get(key)
        if status.failing and status.failure is not None:
            if before is not None and before.failing:
                result.still_failing[key] = status.failure
            else:
                result.new[key] = status.failure
                if before is None:
                    result.unbaselined.add(key)
                    if _file_failed_to_import(baseline, status.failure):
                        result.unimportable.add(key)
        elif before is not None and before.failing and before.failure is not None:
            result.fixed[key] = before.failure
    return result


def _file_failed_to_import(baseline: Ledger, failure: Failure) -> bool:
    if not failure.test_id or "::" not in failure.test_id:
        return False
    before = baseline.entries.get(failure.test_id.split("::", 1)[0])
    return before is not None and before.failing and before.failure is not None \
        and before.failure.kind == "error"
