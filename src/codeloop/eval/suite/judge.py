"""The suite's judge: the task's tests on a fresh checkout with the candidate diff applied.

The diff is untrusted: its tests run in the sandbox with no network and their writes thrown
away. Files the task protects (an exercise's tests) are put back first, so a diff cannot
pass by rewriting the tests. Resolved means every FAIL_TO_PASS and PASS_TO_PASS test
passes, or, for a task that names no tests, that the test command succeeds.
"""

from __future__ import annotations

import shlex
import time
from dataclasses import dataclass, field
from pathlib import Path

from codeloop.eval.scratch import scratch_dir
from codeloop.eval.suite.prepare import checkout
from codeloop.eval.suite.tasks import SuiteTask
from codeloop.eval.swebench.checkout import PatchFailed, apply_patch
from codeloop.sandbox.base import CommandResult, Limits, Sandbox
from codeloop.sandbox.bwrap_backend import BwrapSandbox
from codeloop.sandbox.environment import Toolchain, ToolchainSandbox
from codeloop.sandbox.errors import SandboxUnavailable
from codeloop.sandbox.subprocess_backend import SubprocessSandbox
from codeloop.verify.models import ParsedOutput
from codeloop.verify.parsers import PARSERS
from codeloop.workspace.errors import UnsafePath
from codeloop.workspace.hostfs import SafeRoot

# Marks where the report file starts in the output (the sandbox's writes do not outlive it).
REPORT_MARK = "<<<codeloop-eval-report>>>"


@dataclass
class Verdict:
    resolved: bool
    reason: str = ""
    passed: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    per_test: bool = False  # whether the output gave test-level results
    exit_code: int | None = None
    seconds: float = 0.0
    sandbox: str = ""
    output_tail: str = ""


def judge_command(task: SuiteTask) -> str:
    """Setup, tests and (when the task names one) the report, in one shell in the sandbox."""
    parts = [f"( {task.setup} ) >/dev/null 2>&1 || echo 'setup failed'"] if task.setup else []
    parts.append(task.test_command)
    script = "\n".join(parts)
    if not task.report:
        return script
    return (f"{script}\nstatus=$?\necho {shlex.quote(REPORT_MARK)}\n"
            f"cat {shlex.quote(task.report)} 2>/dev/null\nexit $status")


def split_report(output: str) -> tuple[str, str | None]:
    head, mark, tail = output.rpartition(REPORT_MARK + "\n")
    return (head, tail) if mark else (output, None)


def grade(task: SuiteTask, parsed: ParsedOutput, exit_code: int | None) -> Verdict:
    """Resolved when the named tests pass; with none named, when the command exits 0 and
    nothing failed."""
    failed = sorted({f.test_id or f.message[:120] for f in parsed.failures if f.kind == "test"}
                    | {f.test_id or f.message[:120] for f in parsed.failures
                       if f.kind not in ("test", "lint", "security", "type")})
    verdict = Verdict(False, passed=sorted(set(parsed.passed)), failed=failed,
                      per_test=parsed.structured and bool(parsed.passed or parsed.failures),
                      exit_code=exit_code)
    wanted = [*task.FAIL_TO_PASS, *task.PASS_TO_PASS]
    if wanted:
        passing = set(verdict.passed)
        missing = [t for t in wanted if t not in passing]
        verdict.resolved = not missing
        if missing:
            verdict.reason = f"{len(missing)}/{len(wanted)} named tests not passing: " \
                             + ", ".join(missing[:5])
        return verdict
    verdict.resolved = exit_code == 0 and not failed
    if not verdict.resolved:
        verdict.reason = (f"{len(failed)} tests failed: " + ", ".join(failed[:5])) if failed \
            else f"the test command exited {exit_code}"
    return verdict


def _box(sandboxed: bool, toolchain: Toolchain | None) -> tuple[Sandbox, str]:
    box: Sandbox
    if not sandboxed:
        box, where = SubprocessSandbox(), "none: the sandbox is off"
    else:
        try:
            box = BwrapSandbox(None, extra_ro_binds=toolchain.ro_binds if toolchain else ())
            where = "bwrap"
        except SandboxUnavailable as exc:
            box, where = SubprocessSandbox(), f"none: {exc.message}"
    return (ToolchainSandbox(box, toolchain) if toolchain else box), where


def run_tests(task: SuiteTask, repo: Path, sandboxed: bool = True) -> tuple[CommandResult, str]:
    task.toolchain.require(task.id)
    box, where = _box(sandboxed, task.toolchain.sandbox_toolchain())
    limits = Limits(timeout_s=task.time_limit_s, memory_mb=8192, max_output_bytes=8 << 20,
                    max_processes=1024)
    return box.run(judge_command(task), repo, None, limits), where


def judge(task: SuiteTask, diff: str, *, work_dir: Path | None = None,
          sandboxed: bool = True) -> Verdict:
    """Apply `diff` to a fresh checkout of the task, put protected files back, run the tests."""
    start = time.monotonic()
    with scratch_dir(work_dir, "judge") as tmp:
        repo = checkout(task, tmp / "repo")
        view = SafeRoot(repo)
        originals = {rel: data for rel in task.protected
                     if (data := view.read_if_file(rel)) is not None}
        try:
            apply_patch(repo, diff, "candidate diff")
        except PatchFailed as exc:
            return Verdict(False, exc.message, seconds=time.monotonic() - start)
        try:
            for rel, data in originals.items():
                view.write_bytes(rel, data)  # a link the diff put there is replaced
        except UnsafePath as exc:
            return Verdict(False, f"the diff put a link where the task's tests are ({exc})",
                           seconds=time.monotonic() - start)
        result, where = run_tests(task, repo, sandboxed)
        output, report = split_report(result.output)
        parsed = PARSERS[task.parser](output, report, repo)
    verdict = grade(task, parsed, result.exit_code)
    verdict.seconds = round(time.monotonic() - start, 2)
    verdict.sandbox = where
    verdict.output_tail = "\n".join(output.splitlines()[-30:])
    if result.timed_out:
        verdict.resolved = False
        verdict.reason = f"tests timed out after {task.time_limit_s:.0f}s"
    return verdict
