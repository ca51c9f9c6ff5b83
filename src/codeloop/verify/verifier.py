"""The verifier a session holds: baseline, runs after edits, the finish gate, the summary."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from codeloop.index.graph import FileGraph
from codeloop.sandbox.base import Limits, Sandbox
from codeloop.verify.baseline import Ledger, compare
from codeloop.verify.commands import CommandSpec, split_targets
from codeloop.verify.detect import Plan, detect, sandbox_which
from codeloop.verify.gate import GateDecision, GateRound, check_finish
from codeloop.verify.models import RunResult
from codeloop.verify.pristine import Originals, original_tree, recover
from codeloop.verify.python_env import ProjectPython, describe_python
from codeloop.verify.related import related_tests
from codeloop.verify.runner import run_command, timeout_failure
from codeloop.verify.settings import VerifySettings
from codeloop.verify.summary import summarise
from codeloop.verify.verification import Phase, Verification
from codeloop.workspace.hostfs import SafeRoot

# Runners whose targets are test files, which backfilling the baseline needs.
_FILE_TARGETED = ("junit", "sympy")
# A timed-out run blames the edits only when the same tests took under this fraction of its
# time on the original files: load alone on a shared machine can double a run's time.
NEAR_LIMIT_FRACTION = 0.5


class Verifier:
    """Holds the baseline and the history of one session's verification.

    `changed_files` lists the files edited so far (a workspace's `changed_files`); with it the
    verifier knows which runs still describe the untouched tree and which tests are related.
    `graph` gives the index's file graph, which widens the related tests. `originals` reads a
    file as it was before the session (None: it did not exist); with it, failing tests the
    baseline never ran are run once on the original files to learn whether they are new.
    `python` is the project's interpreter the sandbox was given (`python_env`), for the notes.
    `limits` are the session's command limits (`[limits]`); the verifier sets the timeout and
    output cap of each run.
    """

    def __init__(
        self,
        workspace_path: Path,
        sandbox: Sandbox,
        config: VerifySettings | dict[str, Any] | None = None,
        changed_files: Callable[[], list[str]] | None = None,
        plan: Plan | None = None,
        graph: Callable[[], FileGraph] | None = None,
        originals: Originals | None = None,
        python: ProjectPython | None = None,
        limits: Limits | None = None,
    ) -> None:
        self.root = Path(workspace_path)
        self.sandbox = sandbox
        self.settings = config if isinstance(config, VerifySettings) else VerifySettings.load(config)
        self.changed_files = changed_files
        self.graph = graph
        self.originals = originals
        self.recovered = recover(self.root)
        self.plan = plan or detect(
            self.root, self.settings, sandbox_which(sandbox, self.root, self.settings.env)
        )
        self.python = python
        self.limits = limits or Limits()
        if python is not None:
            self.plan = replace(self.plan, notes=[*describe_python(python), *self.plan.notes])
        self.base = Ledger()
        self.latest = Ledger()
        self.baseline_taken = False
        # Every run in order, with whether it ran on the untouched tree.
        self.runs: list[tuple[RunResult, bool]] = []
        self.gate_history: list[GateRound] = []
        self._spent_s = 0.0
        # The edits' fingerprint when tests (without a target) and checks last ran.
        self._tests_fingerprint: str | None = None
        self._checks_fingerprint: str | None = None
        # How long each test scope took last time, to judge what the budget allows.
        self._durations: dict[str, float] = {}
        # Test files already run on the original files to fill gaps in the baseline.
        self._backfilled: set[str] = set()
        # Scopes of timed-out runs already run on the original files.
        self._unreadable_checked: set[str] = set()
        # The last result of each (command as shown, edits' fingerprint), to reuse.
        self._results: dict[tuple[str, str], RunResult] = {}
        # Runs on the untouched tree not yet handed out for the event log (`take_pristine`).
        self._unsaved: list[RunResult] = []
        # Test runs that ran no test: of the baseline, and of the last round on the edits.
        self._not_run_before: list[RunResult] = []
        self._not_run: list[RunResult] = []

    # --- state -------------------------------------------------------------------------

    def _changed(self) -> list[str]:
        return self.changed_files() if self.changed_files else []

    def fingerprint(self) -> str | None:
        """A digest of the edited files' contents; None when edits cannot be seen."""
        if self.changed_files is None:
            return None
        digest = hashlib.sha256()
        tree = SafeRoot(self.root)
        for rel in sorted(self._changed()):
            digest.update(rel.encode() + b"\0")
            data = tree.read_if_file(rel)
            digest.update(hashlib.sha256(data).digest() if data is not None else b"-")
        return digest.hexdigest()

    def _record(self, run: RunResult, pristine: bool, latest: bool = True) -> None:
        self.runs.append((run, pristine))
        self._spent_s += run.duration_ms / 1000
        if run.category == "test" and run.outcome != "usage" and not run.reused:
            self._durations[run.scope] = run.duration_ms / 1000
        if pristine:
            self.base.record(run)
            self._unsaved.append(run)
        if latest:
            self.latest.record(run)

    def _limits(self, timeout_s: float) -> Limits:
        remaining = max(1.0, self.settings.time_budget_s - self._spent_s)
        return replace(self.limits, timeout_s=min(timeout_s, remaining),
                       max_output_bytes=self.settings.max_output_bytes)

    def _verification(self, phase: Phase, runs: list[RunResult], notes: list[str]) -> Verification:
        python = self.python.interpreter if self.python and phase == "baseline" else ""
        return Verification(phase, runs, compare(self.base, self.latest), notes, python=python)

    def take_pristine(self) -> list[RunResult]:
        """Runs on the untouched tree since the last call, for the session's event log."""
        runs, self._unsaved = self._unsaved, []
        return runs

    def restore_baseline(self, runs: list[RunResult]) -> None:
        """Take back a baseline recorded before a restart, so it is not re-run on edited files."""
        for run in runs:
            self._record(run, pristine=True, latest=False)
        self._unsaved = []
        self._not_run_before = [r for r in runs if r.category == "test" and r.outcome == "not_run"]
        self.baseline_taken = self.baseline_taken or bool(runs)

    # --- runs ------------------------------------------------------------------------------

    def _run(
        self, spec: CommandSpec, timeout_s: float, targets: list[str] | None = None, scope: str = "full",
        baseline: bool = False,
    ) -> RunResult:
        """Run and record; a run counts for the baseline when asked, or when nothing was edited yet."""
        untouched = self.changed_files is not None and not self._changed()
        before = self.fingerprint()
        key = (spec.display(targets), before) if before is not None else None
        previous = self._results.get(key) if key is not None else None
        if previous is not None:
            # Same command on the same files: its result stands, and running it again would
            # double the cost of a finish that follows an explicit `run_tests`.
            run = previous.model_copy(update={"duration_ms": 0.0, "reused": True, "scope": scope})
            self._record(run, baseline or untouched)
            return run
        run = self._command(spec, self._limits(timeout_s), targets, scope)
        if self.fingerprint() != before:
            # A linter with `fix = true` in the project's config, or a test that writes files.
            run.note = (run.note + "; " if run.note else "") + "this command changed files in the workspace"
            untouched = False
        elif key is not None and run.outcome != "timeout":
            self._results[key] = run
        self._record(run, baseline or untouched)
        return run

    def _command(self, spec: CommandSpec, limits: Limits, targets: list[str] | None, scope: str) -> RunResult:
        run = run_command(spec, self.sandbox, self.root, limits, self.settings.command_env, targets, scope)
        problem = self.python.problem if self.python else None
        if run.outcome == "not_run" and problem:
            run.note += f" ({problem})"
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
            targets = split_targets(target) if target else None
            runs.append(self._run_test_spec(targets, target or "full", baseline=True))
            self._not_run_before = [r for r in runs if r.outcome == "not_run"]
        else:
            notes.append("no test command found: tests are not part of the verification")
        runs += self._run_checks(baseline=True)
        self.baseline_taken = True
        return self._verification("baseline", runs, notes)

    def run_tests(self, target: str | None = None) -> Verification:
        """Run `target`; with none, the tests related to the changed files, then the wider suite.

        The wider suite is `baseline_target` when set (what the baseline knows), else all tests;
        it is skipped when its last run took longer than the budget has left.
        """
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
                runs.append(self._run_test_spec(split_targets(target), target))
            runs += self._backfill()
            return self._verification("after", runs, notes)
        graph = self.graph() if self.graph and spec.target_command else None
        related = related_tests(self.root, self._changed(), spec.name, graph) if spec.target_command else []
        if len(related) > self.settings.max_related_files:
            notes.append(f"related tests: ran the {self.settings.max_related_files} closest of "
                         f"{len(related)} test files (max_related_files); the others are not verified")
            related = related[: self.settings.max_related_files]
        wider = self.settings.baseline_target if spec.target_command else None
        remaining = self.settings.time_budget_s - self._spent_s
        estimate = self._durations.get(wider or "full")
        run_wider = estimate is None or estimate <= remaining
        # Related tests inside the configured wider target would only run twice in this call.
        current: list[RunResult] = []
        if related and not (run_wider and wider and set(related) <= set(split_targets(wider))):
            run = self._run_test_spec(related, "related: " + " ".join(related))
            current.append(run)
            runs += [run, *self._unreadable_before_edits(run, related, notes)]
        if run_wider:
            current.append(self._run_test_spec(split_targets(wider) if wider else None, wider or "full"))
            runs.append(current[-1])
        else:
            notes.append(
                f"wider suite skipped: it took {estimate:.0f}s and {max(0.0, remaining):.0f}s of the verification budget is left"
            )
        self._tests_fingerprint = self.fingerprint()
        self._not_run = [r for r in current if r.outcome == "not_run"]
        runs += self._backfill()
        return self._verification("after", runs, notes)

    def _backfill(self) -> list[RunResult]:
        """Run test files with failures the baseline never saw on the original files.

        Only for runners that take test files as targets; each file is tried once.
        """
        spec = self.plan.test
        if (
            self.originals is None or not self.settings.backfill_baseline or spec is None
            or spec.target_command is None or spec.parser not in _FILE_TARGETED
        ):
            return []
        comparison = compare(self.base, self.latest)
        files = {
            test_id.split("::", 1)[0]
            for key in comparison.unbaselined
            if (test_id := comparison.new[key].test_id)
        }
        wanted = sorted(f for f in files - self._backfilled if self.originals(f) is not None)
        if not wanted:
            return []
        self._backfilled.update(wanted)
        limits = self._limits(self.settings.test_timeout_s)
        run = self._run_on_originals(spec, wanted, "before the edits: " + " ".join(wanted), limits)
        return [run, *self._confirm_alone(spec, wanted, limits)]

    def _run_on_originals(self, spec: CommandSpec, targets: list[str], scope: str, limits: Limits,
                          timed_out_after: RunResult | None = None) -> RunResult:
        """Run `targets` with the edited files put back as they were; it counts for the baseline.
        Near the time at which the edits' run of them timed out (`timed_out_after`), it counts as timing out too."""
        assert self.originals is not None
        with original_tree(self.root, self._changed(), self.originals):
            run = self._command(spec, limits, targets, scope)
        if (
            timed_out_after is not None and run.outcome != "timeout"
            and run.duration_ms > NEAR_LIMIT_FRACTION * timed_out_after.duration_ms
        ):
            run.failures.append(timeout_failure(spec.name, scope))
            run.note = (f"took {run.duration_ms / 1000:.0f}s; after the edits it ran out of time at "
                        f"{timed_out_after.duration_ms / 1000:.0f}s: too near to blame the edits")
        self._record(run, pristine=True, latest=False)
        return run

    def _unreadable_before_edits(self, run: RunResult, targets: list[str], notes: list[str]) -> list[RunResult]:
        """Run a related run's tests once on the original files, under the same label, when it
        left no per-test results (it timed out, or the runner itself crashed): the baseline
        never ran them, and only the same outcome there shows it is not the edits' doing
        (pydicom's tests wait on downloads a sandbox without network cannot make; sympy 1.0's
        runner crashes on a test file that does not import under Python 3.9)."""
        spec = self.plan.test
        crashed = any(f.kind == "crash" for f in run.failures)
        if (
            not (run.outcome == "timeout" or crashed) or spec is None or self.originals is None
            or not self.settings.backfill_baseline or run.scope in self._unreadable_checked
        ):
            return []
        self._unreadable_checked.add(run.scope)
        what = "timed-out" if run.outcome == "timeout" else "crashed"
        remaining = self.settings.time_budget_s - self._spent_s
        if remaining < run.duration_ms / 1000:
            notes.append(f"the {what} tests were not run on the original files: {max(0.0, remaining):.0f}s "
                         "of the verification budget is left")
            return []
        # Only a run stopped by its time limit is judged by time (not one stopped for its output).
        before = self._run_on_originals(spec, targets, run.scope, self._limits(self.settings.test_timeout_s),
                                        run if run.timed_out else None)
        if run.outcome == "timeout" and before.outcome != "timeout":
            took = f"the timed-out tests completed in {before.duration_ms / 1000:.0f}s on the original files"
            if any(f.kind == "timeout" for f in before.failures):
                notes.append(f"{took}, more than half the time they ran after the edits: a slowdown "
                             "this small may be the machine's load, so they count as not completing "
                             "before or after (not verified)")
            else:
                notes.append(f"{took}: the edits made them slower or hang")
        elif crashed and not any(f.kind == "crash" for f in before.failures):
            notes.append("the crashed run completes on the original files: the edits made the test runner crash")
        return [before]

    def _confirm_alone(self, spec: CommandSpec, files: list[str], limits: Limits) -> list[RunResult]:
        """Run alone, on the edited files, the backfilled files whose new failures pass alone on
        the original files: a test that fails only beside other files depends on what ran
        with it, and only the same conditions before and after can blame the edit."""
        new = compare(self.base, self.latest).new
        suspect = sorted({
            file for key, failure in new.items()
            if failure.test_id and key in self.base.entries
            # A failure from a run of its file alone is already the same conditions.
            and self.latest.entries[key].scope != (file := failure.test_id.split("::", 1)[0])
        } & set(files))
        if not suspect:
            return []
        run = self._command(spec, limits, suspect, "alone after the edits: " + " ".join(suspect))
        self._record(run, pristine=False)
        return [run]

    def _run_checks(self, baseline: bool = False) -> list[RunResult]:
        return [self._run(spec, self.settings.check_timeout_s, baseline=baseline) for spec in self.plan.checks]

    def run_checks(self) -> Verification:
        """Lint, type and security checks over the whole project."""
        notes = [] if self.plan.checks else ["no lint, type or security checks found for this project"]
        runs = self._run_checks()
        self._checks_fingerprint = self.fingerprint()
        return self._verification("after", runs, notes)

    # --- the gate ---------------------------------------------------------------------------

    def check_finish(self) -> tuple[GateDecision, Verification | None]:
        """Verify the current edits if not yet verified, then decide; a block counts a round.

        Tests (related, then the wider suite) and checks re-run unless they already ran, without
        a target, on exactly these edits; with no way to see edits they always re-run.
        """
        if self.changed_files is not None and not self._changed():
            return GateDecision(True, "No files were changed: there is nothing to verify."), None
        fingerprint = self.fingerprint()
        ran: Verification | None = None
        stale_tests = fingerprint is None or fingerprint != self._tests_fingerprint
        stale_checks = fingerprint is None or fingerprint != self._checks_fingerprint
        if stale_tests or stale_checks:
            parts = [self.run_tests(None)] if stale_tests else []
            parts += [self.run_checks()] if stale_checks else []
            runs = [r for part in parts for r in part.runs]
            ran = Verification("final", runs, compare(self.base, self.latest), [n for p in parts for n in p.notes])
        decision = check_finish(
            self.base, self.latest, self.gate_history,
            max_fix_rounds=self.settings.max_fix_rounds, fingerprint=fingerprint,
            block_on=self.settings.block_on, block_on_security=self.settings.block_on_security,
            not_run=[r.note for r in self._not_run], not_run_before=bool(self._not_run_before),
        )
        if not self.baseline_taken:
            decision.message += "\n(No baseline was taken before the edits: every failure counts as new.)"
        if not decision.allow:
            self.gate_history.append(GateRound(decision.keys, fingerprint))
        return decision, ran

    # --- reporting -----------------------------------------------------------------------------

    def summary(self) -> str:
        """Exactly what was verified: commands, counts, and new / fixed / still failing."""
        return summarise(self.runs, compare(self.base, self.latest), self.plan.notes,
                         self.baseline_taken, len(self.gate_history))
