"""The verifier a session holds: baseline, runs after edits, the finish gate, the summary."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from codeloop.events import VerificationRan
from codeloop.index.graph import FileGraph
from codeloop.sandbox.base import Limits, Sandbox
from codeloop.verify.baseline import Comparison, Ledger, compare
from codeloop.verify.commands import CommandSpec
from codeloop.verify.detect import Plan, detect, sandbox_which
from codeloop.verify.gate import GateDecision, GateRound, blocks, check_finish
from codeloop.verify.models import RunResult, keyed
from codeloop.verify.related import related_tests
from codeloop.verify.runner import run_command
from codeloop.verify.settings import VerifySettings

Phase = Literal["baseline", "after", "final"]


@dataclass
class Verification:
    """What one verifier call ran and what it means against the baseline."""

    phase: Phase
    runs: list[RunResult] = field(default_factory=list)
    comparison: Comparison = field(default_factory=Comparison)
    notes: list[str] = field(default_factory=list)

    @property
    def passed(self) -> int:
        return sum(len(r.passed) for r in self.runs)

    @property
    def failed(self) -> int:
        return sum(len(r.failures) for r in self.runs)

    def text(self) -> str:
        """Compact text for the model: per command counts, then new / fixed / still failing."""
        lines = [f"{r.name} [{r.scope}]: {r.counts}{' - ' + r.note if r.note else ''}" for r in self.runs]
        if not self.runs:
            lines.append("nothing ran")
        lines += [f"note: {n}" for n in self.notes]
        c = self.comparison
        relevant = {key for r in self.runs for key in keyed(r.failures)}
        new = {k: f for k, f in c.new.items() if k in relevant}
        if new:
            lines.append(f"NEW failures (not failing before your edits): {len(new)}")
            for key, failure in list(new.items())[:20]:
                lines.append(f"- {failure.headline()}" + (" [no baseline]" if key in c.unbaselined else ""))
                lines += [f"    {t}" for t in failure.trace.splitlines()[-6:]]
        if len(c.new) > len(new):
            lines.append(f"{len(c.new) - len(new)} other new failure(s) from earlier runs still stand")
        if c.fixed:
            lines.append(f"FIXED so far (failing before, passing now): {', '.join(list(c.fixed)[:20])}")
        still = [f for k, f in c.still_failing.items() if k in relevant]
        if still:
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
        }

    def event(self) -> VerificationRan:
        c = self.comparison
        return VerificationRan(
            phase=self.phase, commands=[r.command for r in self.runs], passed=self.passed,
            failed=self.failed, new_failures=list(c.new), fixed_failures=list(c.fixed),
            still_failing=list(c.still_failing), summary=self.text()[:4000],
        )


class Verifier:
    """Holds the baseline and the history of one session's verification.

    `changed_files` lists the files edited so far (a workspace's `changed_files`); with it the
    verifier knows which runs still describe the untouched tree and which tests are related.
    `graph` gives the index's file graph, which widens the related tests.
    """

    def __init__(
        self,
        workspace_path: Path,
        sandbox: Sandbox,
        config: VerifySettings | dict[str, Any] | None = None,
        changed_files: Callable[[], list[str]] | None = None,
        plan: Plan | None = None,
        graph: Callable[[], FileGraph] | None = None,
    ) -> None:
        self.root = Path(workspace_path)
        self.sandbox = sandbox
        self.settings = config if isinstance(config, VerifySettings) else VerifySettings.load(config)
        self.changed_files = changed_files
        self.graph = graph
        self.plan = plan or detect(
            self.root, self.settings, sandbox_which(sandbox, self.root, self.settings.env)
        )
        self.base = Ledger()
        self.latest = Ledger()
        self.baseline_taken = False
        # Every run in order, with whether it ran on the untouched tree.
        self.runs: list[tuple[RunResult, bool]] = []
        self.gate_history: list[GateRound] = []
        self._spent_s = 0.0
        self._verified_fingerprint: str | None = None
        self._full_duration_s: float | None = None

    # --- state -------------------------------------------------------------------------

    def _changed(self) -> list[str]:
        return self.changed_files() if self.changed_files else []

    def fingerprint(self) -> str | None:
        """A digest of the edited files' contents; None when edits cannot be seen."""
        if self.changed_files is None:
            return None
        digest = hashlib.sha256()
        for rel in sorted(self._changed()):
            digest.update(rel.encode() + b"\0")
            path = self.root / rel
            digest.update(hashlib.sha256(path.read_bytes()).digest() if path.is_file() else b"-")
        return digest.hexdigest()

    def _record(self, run: RunResult, pristine: bool) -> None:
        self.runs.append((run, pristine))
        self._spent_s += run.duration_ms / 1000
        if run.category == "test" and run.scope == "full" and run.outcome != "usage":
            self._full_duration_s = run.duration_ms / 1000
        if pristine:
            self.base.record(run)
        self.latest.record(run)

    def _limits(self, timeout_s: float) -> Limits:
        remaining = max(1.0, self.settings.time_budget_s - self._spent_s)
        return Limits(timeout_s=min(timeout_s, remaining), max_output_bytes=self.settings.max_output_bytes)

    def _verification(self, phase: Phase, runs: list[RunResult], notes: list[str]) -> Verification:
        return Verification(phase, runs, compare(self.base, self.latest), notes)

    # --- runs ------------------------------------------------------------------------------

    def _run(
        self, spec: CommandSpec, timeout_s: float, targets: list[str] | None = None, scope: str = "full",
        baseline: bool = False,
    ) -> RunResult:
        """Run and record; a run counts for the baseline when asked, or when nothing was edited yet."""
        untouched = self.changed_files is not None and not self._changed()
        before = self.fingerprint()
        run = run_command(spec, self.sandbox, self.root, self._limits(timeout_s), self.settings.env, targets, scope)
        if self.fingerprint() != before:
            # A linter with `fix = true` in the project's config, or a test that writes files.
            run.note = (run.note + "; " if run.note else "") + "this command changed files in the workspace"
            untouched = False
        self._record(run, baseline or untouched)
        return run

    def _run_test_spec(self, targets: list[str] | None, scope: str, baseline: bool = False) -> RunResult:
        assert self.plan.test is not None
        return self._run(self.plan.test, self.settings.test_timeout_s, targets, scope, baseline)

    def baseline(self, target: str | None = None) -> Verification:
        """Run the tests (`target`, else `baseline_target`, else all) and checks before any edit."""
        notes = list(self.plan.notes)
        if self._changed():
            notes.append("files were already edited: this baseline may include the agent's changes")
        target = target or self.settings.baseline_target
        runs: list[RunResult] = []
        if self.plan.test is not None:
            targets = target.split() if target else None
            runs.append(self._run_test_spec(targets, target or "full", baseline=True))
        else:
            notes.append("no test command found: tests are not part of the verification")
        runs += self._run_checks(baseline=True)
        self.baseline_taken = True
        return self._verification("baseline", runs, notes)

    def run_tests(self, target: str | None = None) -> Verification:
        """Run `target`; with none, the tests related to the changed files, then the wider suite."""
        notes: list[str] = []
        if self.plan.test is None:
            return self._verification("after", [], ["no test command found for this project"])
        spec = self.plan.test
        runs: list[RunResult] = []
        if target:
            if spec.target_command is None:
                notes.append(f"{spec.name} cannot run a chosen target here: ran the whole suite")
                runs.append(self._run_test_spec(None, "full"))
            else:
                runs.append(self._run_test_spec(target.split(), target))
            return self._verification("after", runs, notes)
        graph = self.graph() if self.graph and spec.target_command else None
        related = related_tests(self.root, self._changed(), spec.name, graph) if spec.target_command else []
        if related:
            runs.append(self._run_test_spec(related, "related: " + " ".join(related)))
        remaining = self.settings.time_budget_s - self._spent_s
        estimate = self._full_duration_s
        if estimate is None or estimate <= remaining:
            runs.append(self._run_test_spec(None, "full"))
        else:
            notes.append(
                f"wider suite skipped: it took {estimate:.0f}s and {max(0.0, remaining):.0f}s of the verification budget is left"
            )
        return self._verification("after", runs, notes)

    def _run_checks(self, baseline: bool = False) -> list[RunResult]:
        return [self._run(spec, self.settings.check_timeout_s, baseline=baseline) for spec in self.plan.checks]

    def run_checks(self) -> Verification:
        """Lint, type and security checks over the whole project."""
        notes = [] if self.plan.checks else ["no lint, type or security checks found for this project"]
        return self._verification("after", self._run_checks(), notes)

    # --- the gate ---------------------------------------------------------------------------

    def check_finish(self) -> tuple[GateDecision, Verification | None]:
        """Verify the current edits if not yet verified, then decide; a block counts a round."""
        fingerprint = self.fingerprint()
        ran: Verification | None = None
        if fingerprint is None or fingerprint != self._verified_fingerprint:
            tests = self.run_tests(None)
            checks = self.run_checks()
            ran = Verification("final", tests.runs + checks.runs, compare(self.base, self.latest), tests.notes + checks.notes)
            self._verified_fingerprint = fingerprint
        decision = check_finish(
            self.base, self.latest, self.gate_history,
            max_fix_rounds=self.settings.max_fix_rounds, fingerprint=fingerprint,
            block_on=self.settings.block_on, block_on_security=self.settings.block_on_security,
        )
        if not self.baseline_taken:
            decision.message += "\n(No baseline was taken before the edits: every failure counts as new.)"
        if not decision.allow:
            self.gate_history.append(GateRound(frozenset(f.base_key() for f in decision.blocking), fingerprint))
        return decision, ran

    # --- reporting -----------------------------------------------------------------------------

    def summary(self) -> str:
        """Exactly what was verified: commands, counts, and new / fixed / still failing."""
        c = compare(self.base, self.latest)
        lines = ["Verification summary"]
        if not self.runs:
            lines.append("- nothing was run: the result is NOT verified")
        for run, pristine in self.runs:
            when = "before edits" if pristine else "after edits"
            lines.append(f"- [{when}] `{run.command}` ({run.scope}): {run.counts}, exit {run.exit_code}, {run.duration_ms / 1000:.1f}s")
        lines.append(
            f"New failures: {len(c.new)}; fixed: {len(c.fixed)}; still failing as before: {len(c.still_failing)}"
        )
        lines += [f"  new: {f.headline()}" for f in list(c.new.values())[:20]]
        lines += [f"  fixed: {k}" for k in list(c.fixed)[:20]]
        if self.plan.notes:
            lines += [f"Note: {n}" for n in self.plan.notes]
        if not self.baseline_taken:
            lines.append("Note: no baseline was taken before the first edit.")
        if self.gate_history:
            lines.append(f"Finish was blocked {len(self.gate_history)} time(s).")
        return "\n".join(lines)

