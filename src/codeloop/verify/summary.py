"""The verification summary people read at the end: each command once, then what each run found."""

from __future__ import annotations

from codeloop.verify.baseline import Comparison
from codeloop.verify.gate import could_not_run_text
from codeloop.verify.models import RunResult
from codeloop.verify.verification import REUSED

_LIST_AT_MOST = 20


def _commands(runs: list[tuple[RunResult, bool]]) -> dict[str, str]:
    """Each command by name, as it runs on everything: runs on chosen tests only add targets."""
    shortest: dict[str, str] = {}
    for run, _ in runs:
        known = shortest.get(run.name)
        if known is None or len(run.command) < len(known):
            shortest[run.name] = run.command
    return shortest


def summarise(runs: list[tuple[RunResult, bool]], c: Comparison, notes: list[str],
              baseline_taken: bool, blocked: int) -> str:
    """Exactly what was verified: commands, counts, and new / fixed / still failing."""
    lines = ["Verification summary"]
    if not runs:
        lines.append("- nothing was run: the result is NOT verified")
    lines += [f"- {name}: `{command}`" for name, command in _commands(runs).items()]
    for run, pristine in runs:
        when = "before edits" if pristine else "after edits"
        took = REUSED.strip() if run.reused else f"{run.duration_ms / 1000:.1f}s"
        lines.append(f"  - [{when}] {run.name} ({run.scope}): {run.counts}, exit {run.exit_code}, {took}")
    not_run = list(dict.fromkeys(r.note for r, pristine in runs if r.outcome == "not_run" and not pristine))
    if not_run:
        lines.append(f"{could_not_run_text(not_run)}: the result is NOT verified")
    lines.append(f"New failures: {len(c.new)}; fixed: {len(c.fixed)}; still failing as before: {len(c.still_failing)}")
    lines += [f"  new: {f.headline()}" for f in list(c.new.values())[:_LIST_AT_MOST]]
    lines += [f"  fixed: {k}" for k in list(c.fixed)[:_LIST_AT_MOST]]
    lines += [f"Note: {n}" for n in notes]
    if not baseline_taken:
        lines.append("Note: no baseline was taken before the first edit.")
    if blocked:
        lines.append(f"Finish was blocked {blocked} time(s).")
    return "\n".join(lines)
