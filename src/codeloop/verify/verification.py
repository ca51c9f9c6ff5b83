"""What one verifier call ran and what it means against the baseline, for the model and the log."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from codeloop.events import VerificationRan
from codeloop.verify.baseline import Comparison
from codeloop.verify.gate import blocks, could_not_run_text
from codeloop.verify.models import RunResult, keyed

Phase = Literal["baseline", "after", "final"]
_EVENT_STILL_FAILING = 200
REUSED = " (reused: the files and the command are unchanged since it last ran)"


@dataclass
class Verification:
    """What one verifier call ran and what it means against the baseline."""

    phase: Phase
    runs: list[RunResult] = field(default_factory=list)
    comparison: Comparison = field(default_factory=Comparison)
    notes: list[str] = field(default_factory=list)
    # The interpreter the tests run with, said once (with the baseline).
    python: str = ""

    @property
    def not_run(self) -> list[str]:
        """Why test runs of this call ran no test (see `not_run`)."""
        return list(dict.fromkeys(r.note for r in self.runs if r.outcome == "not_run"))

    @property
    def passed(self) -> int:
        return sum(len(r.passed) for r in self.runs)

    @property
    def failed(self) -> int:
        return sum(len(r.failures) for r in self.runs)

    def text(self) -> str:
        """Compact text for the model: per command counts, then new / fixed / still failing."""
        lines = [f"{r.name} [{r.scope}]: {r.counts}{' - ' + r.note if r.note and r.outcome != 'not_run' else ''}"
                 f"{REUSED if r.reused else ''}" for r in self.runs]
        if not self.runs:
            lines.append("nothing ran")
        if self.not_run:
            when = " before any edit" if self.phase == "baseline" else ""
            lines.append(f"{could_not_run_text(self.not_run)}{when}: nothing was verified by "
                         f"{'these runs' if len(self.runs) > 1 else 'this run'}")
        lines += [f"note: {n}" for n in self.notes]
        c = self.comparison
        relevant = {key for r in self.runs for key in keyed(r.failures)}
        new = {k: f for k, f in c.new.items() if k in relevant}
        if new:
            lines.append(f"NEW failures (not failing before your edits): {len(new)}")
            for key, failure in list(new.items())[:20]:
                lines.append(f"- {failure.headline()}{c.why_no_baseline(key)}")
                lines += [f"    {t}" for t in failure.trace.splitlines()[-6:]]
        if len(c.new) > len(new):
            lines.append(f"{len(c.new) - len(new)} other new failure(s) from earlier runs still stand")
        if c.fixed:
            lines.append(f"FIXED so far (failing before, passing now): {', '.join(list(c.fixed)[:20])}")
        still = [f for k, f in c.still_failing.items() if k in relevant]
        if still and self.phase != "baseline":
            lines.append(f"Still failing as before the edits: {len(still)}")
            lines += [f"- {f.headline()}" for f in still[:10]]
        if self.phase == "baseline":
            # Failing tests first; low-severity findings would bury them.
            failing = [f for r in self.runs for f in r.failures if blocks(f)]
            failing.sort(key=lambda f: f.kind != "test")
            if failing:
                lines.append(f"Failing before any edit ({len(failing)}; these will not block finishing):")
                lines += [f"- {f.headline()}" for f in failing[:20]]
        return "\n".join(lines)

    def data(self) -> dict[str, Any]:
        c = self.comparison
        return {
            "phase": self.phase,
            "runs": [r.model_dump(exclude={"output_tail"}) for r in self.runs],
            "new_failures": [f.model_dump() for f in c.new.values()],
            "fixed": list(c.fixed),
            "still_failing": list(c.still_failing),
            "notes": self.notes,
            "could_not_run": self.not_run,
        }

    def event(self) -> VerificationRan:
        c = self.comparison
        return VerificationRan(
            phase=self.phase, commands=[r.command for r in self.runs], passed=self.passed,
            failed=self.failed, new_failures=list(c.new), fixed_failures=list(c.fixed),
            # A legacy suite can have thousands; `failed` keeps the count, the text the gist.
            still_failing=list(c.still_failing)[:_EVENT_STILL_FAILING], summary=self.text()[:4000],
            seconds=round(sum(r.duration_ms for r in self.runs) / 1000, 3),
            could_not_run=self.not_run, python=self.python,
        )
