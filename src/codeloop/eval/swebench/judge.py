"""The independent judge: apply a diff to a fresh checkout and run the task's tests there.

As the SWE-bench harness does: test patch and candidate diff on a clean checkout at the
base commit, the repository's own test command on the files the test patch touches, and
"resolved" when every FAIL_TO_PASS test passes and every PASS_TO_PASS test still passes.
A test missing from the output counts as not passing. The diff is untrusted code: its tests
run inside the sandbox (no network, the checkout's writes thrown away, the environment
read-only) wherever bwrap can isolate; elsewhere they run as the harness runs them, and the
verdict says so.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from pathlib import Path

from codeloop.eval.scratch import scratch_dir
from codeloop.eval.swebench.checkout import PatchFailed, apply_patch, checkout
from codeloop.eval.swebench.envs import TaskEnv
from codeloop.eval.swebench.instances import SweInstance
from codeloop.eval.swebench.procs import ShellResult, run_shell
from codeloop.eval.swebench.testlogs import PASSING, Status, network_failures, parse_output
from codeloop.eval.swebench.toolchain import reinstall_plan, task_sandbox
from codeloop.sandbox.base import Limits
from codeloop.sandbox.environment import ToolchainSandbox
from codeloop.sandbox.errors import SandboxUnavailable

TEST_TIMEOUT_S = 1800.0
# Whole-suite logs (sympy's verbose runner, xarray's thousands of tests) are graded line by
# line: none may be cut. numpy and dask reserve far more address space than they touch.
_TEST_LIMITS = Limits(timeout_s=TEST_TIMEOUT_S, memory_mb=16_384,
                      max_output_bytes=1 << 30, max_processes=1024)


@dataclass
class Verdict:
    resolved: bool
    reason: str = ""
    f2p_failing: list[str] = field(default_factory=list)
    p2p_failing: list[str] = field(default_factory=list)
    statuses: dict[str, Status] = field(default_factory=dict)
    # Tests that failed for want of network access (left out of grading when known).
    network: set[str] = field(default_factory=set)
    seconds: float = 0.0
    output_tail: str = ""
    sandbox: str = ""  # where the tests ran: "bwrap", or "none: why"


def test_command(env: TaskEnv, inst: SweInstance) -> str:
    return " ".join([env.test_cmd, *(shlex.quote(f) for f in inst.test_files())])


def grade(
    inst: SweInstance, statuses: dict[str, Status], excluded: frozenset[str] = frozenset(),
) -> Verdict:
    """Resolved when all FAIL_TO_PASS and all PASS_TO_PASS tests (but `excluded`) pass."""
    f2p = [t for t in inst.FAIL_TO_PASS if t not in excluded and statuses.get(t) not in PASSING]
    p2p = [t for t in inst.PASS_TO_PASS if t not in excluded and statuses.get(t) not in PASSING]
    reason = ""
    if f2p or p2p:
        reason = f"{len(f2p)}/{len(inst.FAIL_TO_PASS)} FAIL_TO_PASS and " \
                 f"{len(p2p)}/{len(inst.PASS_TO_PASS)} PASS_TO_PASS tests not passing"
    return Verdict(not (f2p or p2p), reason, f2p, p2p, statuses)


def judge(
    inst: SweInstance, env: TaskEnv, mirror: Path, diff: str, *, work_dir: Path | None = None,
    excluded: frozenset[str] = frozenset(), sandboxed: bool = True,
) -> Verdict:
    """Run the task's tests on a fresh checkout with the test patch and `diff` applied."""
    with scratch_dir(work_dir, "judge") as tmp:
        repo = checkout(mirror, inst.base_commit, tmp / "repo")
        prepared = env.prepare(repo)
        if not prepared.ok:
            return Verdict(False, "reinstalling the project failed", output_tail=prepared.tail())
        try:
            apply_patch(repo, inst.test_patch, "test patch")
            apply_patch(repo, diff, "candidate diff")
        except PatchFailed as exc:
            return Verdict(False, exc.message)
        # Installed once more after the diff: a diff may change packaging (entry points, setup).
        packaging = bool(diff.strip()) and any(n in diff for n in ("setup.py", "setup.cfg", "pyproject"))
        runner = _Runner(env, repo, tmp, sandboxed, packaging)
        if packaging:
            runner.reinstall()
        result = runner.run(test_command(env, inst))
    verdict = grade(inst, parse_output(env.spec.runner, result.output), excluded)
    verdict.network = network_failures(result.output)
    verdict.seconds = result.seconds
    verdict.output_tail = result.tail(30)
    verdict.sandbox = runner.where
    if result.timed_out:
        verdict.resolved = False
        verdict.reason = f"tests timed out after {TEST_TIMEOUT_S:.0f}s"
    return verdict


class _Runner:
    """Runs the judge's commands in the checkout: sandboxed when it can, on the host if not."""

    def __init__(self, env: TaskEnv, repo: Path, scratch: Path, sandboxed: bool,
                 packaging: bool) -> None:
        self.env, self.repo = env, repo
        self.box: ToolchainSandbox | None = None
        self.plan = reinstall_plan(env, repo) if packaging else None
        self.where = "none: the sandbox is off"
        if sandboxed:
            try:
                self.box, self.where = self._sandbox(scratch), "bwrap"
            except SandboxUnavailable as exc:
                self.where = f"none: {exc.message}"
        environ = env.environ()
        if self.box is not None:  # the sandbox has a private /tmp and its own HOME
            self.environ = {k: v for k, v in environ.items() if k not in ("HOME", "TMPDIR")}
        else:
            # A private temp dir: pytest prunes old /tmp/pytest-of-USER/pytest-N dirs, which
            # removes the files of any other test session running at the same time.
            (scratch / "tmp").mkdir()
            self.environ = environ | {"TMPDIR": str(scratch / "tmp")}

    def _sandbox(self, scratch: Path) -> ToolchainSandbox:
        """The diff's packaging code installs into overlays of the shared virtualenv and
        compiler cache: its writes last for this judgement and reach neither, so nothing it
        leaves can run later outside the sandbox."""
        if self.plan is None:
            return task_sandbox(self.env, self.repo)
        overlaid = {self.env.bin_dir.parent: scratch / "venv-layer"}
        if self.plan.cache_dir is not None:
            overlaid[self.plan.cache_dir] = scratch / "cache-layer"
        return task_sandbox(self.env, self.repo, overlaid=overlaid, readable=self.plan.readable)

    def run(self, command: str) -> ShellResult:
        if self.box is None:
            return run_shell(command, self.repo, self.environ, TEST_TIMEOUT_S)
        done = self.box.run(command, self.repo, self.environ, _TEST_LIMITS)
        return ShellResult(None if done.timed_out else done.exit_code, done.output,
                           done.duration_ms / 1000, done.timed_out)

    def reinstall(self) -> None:
        """Reinstall the project after a packaging change (the checkout's own build files
        stay as the first install left them)."""
        if self.box is None:
            self.env.prepare(self.repo, edits=False)
        elif self.plan is not None:
            self.plan.run(self.box, self.repo)
