"""The finish gate: a pure decision over the baseline, the latest state and earlier attempts."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from codeloop.verify.baseline import Comparison, Ledger, compare
from codeloop.verify.models import Failure
from codeloop.verify.settings import GATE_KINDS

_LIST_AT_MOST = 15


@dataclass(frozen=True)
class GateRound:
    """One blocked finish attempt: what blocked it, and the state of the edits at the time."""

    blocking: frozenset[str]
    fingerprint: str | None = None


@dataclass
class GateDecision:
    allow: bool
    message: str
    escalate: bool = False
    blocking: list[Failure] = field(default_factory=list)
    comparison: Comparison = field(default_factory=Comparison)
    round: int = 0
    # Why the tests could not run (empty when they ran).
    not_run: list[str] = field(default_factory=list)

    @property
    def keys(self) -> frozenset[str]:
        """What blocked, as a later round compares it."""
        if self.not_run:
            return frozenset({could_not_run_text(self.not_run)})
        return frozenset(f.base_key() for f in self.blocking)


def blocks(failure: Failure, block_on: Iterable[str] = GATE_KINDS, block_on_security: bool = True) -> bool:
    """Whether a new failure of this kind keeps the model from finishing."""
    if failure.kind == "security":
        return block_on_security and failure.severity == "high"
    return failure.kind in set(block_on) and failure.severity != "warning"


def _listing(failures: dict[str, Failure], comparison: Comparison | None = None) -> list[str]:
    lines = []
    for key, failure in list(failures.items())[:_LIST_AT_MOST]:
        note = comparison.why_no_baseline(key) if comparison is not None else ""
        lines.append(f"- {failure.headline()}{note}")
        if failure.trace:
            lines += [f"    {t}" for t in failure.trace.splitlines()[-8:]]
    if len(failures) > _LIST_AT_MOST:
        lines.append(f"- ... and {len(failures) - _LIST_AT_MOST} more")
    return lines


def check_finish(
    baseline: Ledger,
    latest: Ledger,
    history: list[GateRound],
    *,
    max_fix_rounds: int = 3,
    fingerprint: str | None = None,
    block_on: Iterable[str] = GATE_KINDS,
    block_on_security: bool = True,
    not_run: Sequence[str] = (),
    not_run_before: bool = False,
) -> GateDecision:
    """Allow when nothing new blocks; else hand the failures back, or escalate when stuck.

    Escalate when the same blocking set comes back after a fix attempt (the edits changed
    since the last blocked attempt), or when `max_fix_rounds` attempts were already blocked.
    `fingerprint` identifies the current edits (see `Verifier.fingerprint`). `not_run` holds
    why the latest test runs could not run any test: that never passes; when the tests could
    not run before the edits either (`not_run_before`), no edit can help, so a human decides.
    """
    comparison = compare(baseline, latest)
    if not_run:
        return _could_not_run(list(dict.fromkeys(not_run)), not_run_before, history,
                              max_fix_rounds, fingerprint, comparison)
    kinds = list(block_on)
    blocking = {k: f for k, f in comparison.new.items() if blocks(f, kinds, block_on_security)}
    warnings = {k: f for k, f in comparison.new.items() if k not in blocking}
    if not blocking:
        lines = ["Verification passed: no new failures against the baseline."]
        if comparison.fixed:
            lines.append(f"Fixed ({len(comparison.fixed)}): " + ", ".join(list(comparison.fixed)[:_LIST_AT_MOST]))
        if comparison.still_failing:
            lines.append(f"Still failing as before the edits ({len(comparison.still_failing)}).")
        if warnings:
            lines += ["New findings that do not block:", *_listing(warnings)]
        return GateDecision(True, "\n".join(lines), comparison=comparison, round=len(history))
    keys = frozenset(blocking)
    attempt = len(history) + 1
    last = history[-1] if history else None
    # Without fingerprints there is no telling whether the model edited: assume it did.
    edited = fingerprint is None or last is None or last.fingerprint != fingerprint
    repeated = last is not None and last.blocking == keys and edited
    if repeated or len(history) >= max_fix_rounds:
        why = (
            "the same failures came back after a fix attempt"
            if repeated
            else f"{len(history)} fix round(s) used, the maximum is {max_fix_rounds}"
        )
        message = "\n".join([f"Cannot finish and escalating to a human: {why}.", *_listing(blocking, comparison)])
        return GateDecision(False, message, escalate=True, blocking=list(blocking.values()),
                            comparison=comparison, round=attempt)
    lines = [
        f"Not finished: your changes leave {len(blocking)} new failure(s) that were not failing before "
        f"(fix round {attempt} of {max_fix_rounds}). Fix them, re-run the tests, then finish.",
        *_listing(blocking, comparison),
    ]
    if comparison.still_failing:
        lines.append(f"({len(comparison.still_failing)} failure(s) were already failing before your edits; they do not block.)")
    return GateDecision(False, "\n".join(lines), blocking=list(blocking.values()), comparison=comparison, round=attempt)


def could_not_run_text(reasons: Sequence[str]) -> str:
    return "could not run the tests: " + "; ".join(reasons)


def _could_not_run(reasons: list[str], before: bool, history: list[GateRound], max_fix_rounds: int,
                   fingerprint: str | None, comparison: Comparison) -> GateDecision:
    """The gate when the tests did not run: never a pass, and never silently."""
    what = could_not_run_text(reasons)
    attempt = len(history) + 1
    last = history[-1] if history else None
    keys = frozenset({what})
    edited = fingerprint is None or last is None or last.fingerprint != fingerprint
    repeated = last is not None and last.blocking == keys and edited
    if before or repeated or len(history) >= max_fix_rounds:
        why = ("they could not run before the edits either: the project's environment needs a "
               "person, not a code change" if before else
               "the same problem came back after a fix attempt" if repeated else
               f"{len(history)} fix round(s) used, the maximum is {max_fix_rounds}")
        return GateDecision(False, f"Cannot finish and escalating to a human: {what}. "
                                   f"Nothing was verified ({why}).",
                            escalate=True, comparison=comparison, round=attempt, not_run=reasons)
    return GateDecision(
        False, f"Not finished: {what}. Nothing was verified. If your edits broke the test run, "
               f"fix that, re-run the tests, then finish (fix round {attempt} of {max_fix_rounds}).",
        comparison=comparison, round=attempt, not_run=reasons)
