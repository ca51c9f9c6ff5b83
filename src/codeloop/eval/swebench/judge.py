"""The independent judge: apply a diff to a fresh checkout and run the task's tests there.

As the SWE-bench harness does: test patch and candidate diff on a clean checkout at the
base commit, the repository's own test command on the files the test patch touches, and
"resolved" when every FAIL_TO_PASS test passes and every PASS_TO_PASS test still passes.
A test missing from the output counts as not passing.
"""

from __future__ import annotations

import shlex
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from codeloop.eval.swebench.checkout import PatchFailed, apply_patch, checkout
from codeloop.eval.swebench.envs import TaskEnv
from codeloop.eval.swebench.instances import SweInstance
from codeloop.eval.swebench.procs import run_shell
from codeloop.eval.swebench.testlogs import PASSING, Status, network_failures, parse_output

TEST_TIMEOUT_S = 1800.0


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
    excluded: frozenset[str] = frozenset(),
) -> Verdict:
    """Run the task's tests on a fresh checkout with the test patch and `diff` applied."""
    with tempfile.TemporaryDirectory(prefix="codeloop-judge-", dir=work_dir) as tmp:
        repo = checkout(mirror, inst.base_commit, Path(tmp) / "repo")
        prepared = env.prepare(repo)
        if not prepared.ok:
            return Verdict(False, "reinstalling the project failed", output_tail=prepared.tail())
        try:
            apply_patch(repo, inst.test_patch, "test patch")
            apply_patch(repo, diff, "candidate diff")
        except PatchFailed as exc:
            return Verdict(False, exc.message)
        # Installed once more after the diff: a diff may change packaging (entry points, setup).
        if diff.strip() and ("setup.py" in diff or "setup.cfg" in diff or "pyproject" in diff):
            env.prepare(repo, edits=False)
        # A private temp dir: pytest prunes old /tmp/pytest-of-USER/pytest-N dirs, which
        # removes the files of any other test session running at the same time.
        private_tmp = Path(tmp) / "tmp"
        private_tmp.mkdir()
        environ = env.environ() | {"TMPDIR": str(private_tmp)}
        result = run_shell(test_command(env, inst), repo, environ, TEST_TIMEOUT_S)
    verdict = grade(inst, parse_output(env.spec.runner, result.output), excluded)
    verdict.network = network_failures(result.output)
    verdict.seconds = result.seconds
    verdict.output_tail = result.tail(30)
    if result.timed_out:
        verdict.resolved = False
        verdict.reason = f"tests timed out after {TEST_TIMEOUT_S:.0f}s"
    return verdict
