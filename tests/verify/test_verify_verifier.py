"""The verifier end to end: a real project copied into a workspace, real pytest in a shell sandbox."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from codeloop.events import BaselineRecorded, VerificationRan
from codeloop.sandbox.environment import BASE_PATH
from codeloop.tools.base import ToolContext
from codeloop.tools.verify_tools import (
    RunChecks,
    RunChecksArgs,
    RunTests,
    RunTestsArgs,
    ensure_baseline,
    gate_finish,
)
from codeloop.verify.commands import SCRATCH_DIR
from codeloop.verify.gate import GateDecision
from codeloop.verify.pristine import original_tree
from codeloop.verify.verifier import Verifier
from codeloop.workspace.copy import CopyWorkspace

PROJECT = {
    "pyproject.toml": "[tool.pytest.ini_options]\ntestpaths = ['tests']\n",
    "pkg/__init__.py": "",
    "pkg/calc.py": "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n",
    "pkg/text.py": "def shout(s):\n    return s.upper()\n\n\ndef whisper(s):\n    return s.upper()\n",
    "tests/test_calc.py": (
        "from pkg.calc import add, mul\n\n\n"
        "def test_add():\n    assert add(2, 3) == 5\n\n\n"
        "def test_mul():\n    assert mul(2, 3) == 6\n"
    ),
    "tests/test_text.py": (
        "from pkg import text\n\n\n"
        "def test_shout():\n    assert text.shout('a') == 'A'\n\n\n"
        "def test_whisper():\n    assert text.whisper('A') == 'a'\n"
    ),
}
NO_CHECKS = {"lint": [], "security": [], "typecheck": []}


@pytest.fixture
def workspace(tmp_path: Path, write_tree) -> CopyWorkspace:
    repo = write_tree(tmp_path / "repo", PROJECT)
    return CopyWorkspace(repo, tmp_path / "state")


@pytest.fixture
def make(workspace: CopyWorkspace, sandbox, base_settings):
    """A verifier over the workspace; keyword arguments are verify settings."""

    def build(**config: object) -> Verifier:
        settings = {**base_settings, **NO_CHECKS, **config}
        return Verifier(workspace.path, sandbox, settings, changed_files=workspace.changed_files)

    return build


def edit(workspace: CopyWorkspace, rel: str, old: str, new: str) -> None:
    text = workspace.read(rel).decode()
    assert old in text
    workspace.write(rel, text.replace(old, new).encode())


@pytest.mark.slow
def test_new_failure_blocks_finish_and_the_fix_lets_it_through(workspace: CopyWorkspace, make) -> None:
    verifier = make()
    base = verifier.baseline()
    assert [r.counts for r in base.runs] == ["3 passed, 1 failed, 0 skipped"]
    assert [f.test_id for f in base.runs[0].failures] == ["tests/test_text.py::test_whisper"]

    edit(workspace, "pkg/calc.py", "return a * b", "return a + b")
    after = verifier.run_tests()
    # Related tests first (test_calc imports pkg.calc), then the wider suite.
    assert [r.scope for r in after.runs] == ["related: tests/test_calc.py", "full"]
    assert list(after.comparison.new) == ["tests/test_calc.py::test_mul"]
    assert "NEW failures" in after.text() and "tests/test_calc.py::test_mul" in after.text()
    assert list(after.comparison.still_failing) == ["tests/test_text.py::test_whisper"]

    decision, _ = verifier.check_finish()
    assert not decision.allow and not decision.escalate
    assert "tests/test_calc.py::test_mul" in decision.message and "assert 5 == 6" in decision.message

    edit(workspace, "pkg/calc.py", "def mul(a, b):\n    return a + b", "def mul(a, b):\n    return a * b")
    edit(workspace, "pkg/text.py", "def whisper(s):\n    return s.upper()", "def whisper(s):\n    return s.lower()")
    decision, ran = verifier.check_finish()
    assert decision.allow, decision.message
    assert ran is not None and ran.phase == "final"
    assert list(decision.comparison.fixed) == ["tests/test_text.py::test_whisper"]

    summary = verifier.summary()
    assert "--junitxml" in summary and "[before edits]" in summary and "[after edits]" in summary
    assert "New failures: 0; fixed: 1; still failing as before: 0" in summary
    assert "Finish was blocked 1 time(s)." in summary
    # Reports and bytecode never leak into the diff.
    assert workspace.changed_files() == ["pkg/text.py"]
    assert not (workspace.path / SCRATCH_DIR).exists()


@pytest.mark.slow
def test_the_same_failure_after_a_fix_attempt_escalates(workspace: CopyWorkspace, make) -> None:
    verifier = make()
    verifier.baseline()
    edit(workspace, "pkg/calc.py", "return a * b", "return a + b")
    first, _ = verifier.check_finish()
    assert not first.allow and not first.escalate
    # Finishing again with no edit in between re-runs nothing and does not escalate.
    runs_before = len(verifier.runs)
    second, ran = verifier.check_finish()
    assert ran is None and len(verifier.runs) == runs_before and not second.escalate
    edit(workspace, "pkg/calc.py", "def mul(a, b):", "def mul(a, b):  # tried")
    third, _ = verifier.check_finish()
    assert third.escalate and not third.allow


def test_runs_before_the_first_edit_extend_the_baseline(workspace: CopyWorkspace, make) -> None:
    verifier = make()
    verifier.run_tests("tests/test_text.py")  # the agent reproduces the bug before editing
    edit(workspace, "pkg/text.py", "return s.upper()\n\n\ndef whisper", "return s.lower()\n\n\ndef whisper")
    after = verifier.run_tests("tests/test_text.py")
    assert list(after.comparison.new) == ["tests/test_text.py::test_shout"]
    assert list(after.comparison.still_failing) == ["tests/test_text.py::test_whisper"]
    assert after.comparison.unbaselined == set()


def test_a_target_that_matches_nothing_is_a_usage_error_not_a_failure(workspace: CopyWorkspace, make) -> None:
    verifier = make()
    result = verifier.run_tests("tests/test_missing.py")
    assert result.runs[0].outcome == "usage" and result.runs[0].failures == []
    assert verifier.latest.entries == {}


def test_timeouts_and_crashes_are_failures(workspace: CopyWorkspace, make) -> None:
    slow = make(test="sleep 5", test_timeout_s=0.3)
    run = slow.run_tests("x").runs[0]
    assert run.outcome == "timeout" and [f.kind for f in run.failures] == ["timeout"]
    crash = make(test=f"{sys.executable} -c 'import sys; print(\"boom\"); sys.exit(3)'")
    run = crash.run_tests().runs[0]
    assert run.outcome == "failed" and run.failures[0].kind == "crash"
    assert "code 3" in run.failures[0].message and "boom" in run.failures[0].trace


def test_no_test_command_is_said_plainly(tmp_path: Path, sandbox) -> None:
    (tmp_path / "README").write_text("nothing here\n")
    verifier = Verifier(tmp_path, sandbox, NO_CHECKS)
    assert verifier.run_tests().notes == ["no test command found for this project"]
    decision, _ = verifier.check_finish()
    assert decision.allow
    assert "nothing was run: the result is NOT verified" in verifier.summary()


@pytest.mark.skipif(shutil.which("ruff") is None or shutil.which("bandit") is None, reason="needs ruff and bandit")
def test_checks_flag_new_findings_and_high_severity_blocks(workspace: CopyWorkspace, make) -> None:
    verifier = make(test="", lint=None, security=None)
    assert [c.name for c in verifier.plan.checks] == ["ruff-errors", "bandit"]
    base = verifier.baseline()
    # The baseline already has bandit's low-severity notes on the tests' asserts.
    assert {(f.tool, f.severity) for r in base.runs for f in r.failures} == {("bandit", "low")}
    workspace.write("pkg/runner.py", b"import subprocess\n\n\ndef go(cmd):\n    return subprocess.call(cmd, shell=True) + missing\n")
    checks = verifier.run_checks()
    new = {(f.tool, f.rule) for f in checks.comparison.new.values()}
    assert ("ruff", "F821") in new and any(tool == "bandit" and rule.startswith("B602") for tool, rule in new)
    decision, _ = verifier.check_finish()
    assert not decision.allow and "B602" in decision.message and "F821" in decision.message


def test_tools_return_structured_results_and_emit_events(workspace: CopyWorkspace, sandbox, base_settings) -> None:
    events: list[object] = []
    ctx = ToolContext(workspace=workspace, sandbox=sandbox, emit=events.append,
                      services={"verify_config": {**base_settings, **NO_CHECKS}})
    edit(workspace, "pkg/calc.py", "return a + b\n\n\ndef mul", "return a - b\n\n\ndef mul")
    observation = RunTests().run(RunTestsArgs(target="tests/test_calc.py"), ctx)
    assert observation.ok and observation.untrusted
    assert "tests/test_calc.py::test_add" in observation.output
    run = observation.data["runs"][0]
    assert run["name"] == "pytest" and run["failures"][0]["test_id"] == "tests/test_calc.py::test_add"
    assert isinstance(ctx.services["verifier"], Verifier)
    checks = RunChecks().run(RunChecksArgs(), ctx)
    assert not checks.ok and "no lint" in (checks.error or "")
    # The backfill ran on the original files: it is logged as baseline, for a resume.
    assert [type(e) for e in events] == [BaselineRecorded, VerificationRan, VerificationRan]
    first = events[1]
    # No baseline was taken: the failing file was also run on the original files, where it passed.
    assert isinstance(first, VerificationRan) and first.failed == 1 and first.passed == 3
    assert first.new_failures == ["tests/test_calc.py::test_add"]
    assert RunTestsArgs.model_json_schema()["properties"]["target"]


def test_a_check_that_changes_files_is_flagged_and_not_taken_as_baseline(workspace: CopyWorkspace, make) -> None:
    verifier = make(lint=["touch pkg/generated.py"])
    run = verifier.run_checks().runs[0]
    assert "changed files in the workspace" in run.note
    assert verifier.runs[-1] == (run, False)
    assert workspace.changed_files() == ["pkg/generated.py"]


def test_related_tests_past_the_cap_are_left_out_and_the_result_says_so(
    workspace: CopyWorkspace, make
) -> None:
    verifier = make(baseline_target="tests/test_text.py", max_related_files=1)
    verifier.baseline()
    edit(workspace, "pkg/calc.py", "return a * b", "return a * b  # same")
    workspace.write("tests/test_calc.py", workspace.read("tests/test_calc.py") + b"\n")
    workspace.write("pkg/text.py", workspace.read("pkg/text.py") + b"\n")
    after = verifier.run_tests()
    # Both test files relate to the edits; the edited one is closest and the only one run.
    assert [r.scope for r in after.runs] == ["related: tests/test_calc.py", "tests/test_text.py"]
    assert "ran the 1 closest of 2 test files" in after.text()


def test_finish_reuses_runs_on_the_same_edits_and_the_wider_suite_is_the_baseline_target(
    workspace: CopyWorkspace, make
) -> None:
    verifier = make(baseline_target="tests/test_calc.py")
    base = verifier.baseline()
    assert [r.scope for r in base.runs] == ["tests/test_calc.py"]
    edit(workspace, "pkg/text.py", "return s.upper()\n\n\ndef whisper", "return s.title()\n\n\ndef whisper")
    after = verifier.run_tests()
    # Related first (test_text imports pkg.text), then the baseline target instead of everything.
    assert [r.scope for r in after.runs] == ["related: tests/test_text.py", "tests/test_calc.py"]
    verifier.run_checks()
    runs_before = len(verifier.runs)
    decision, ran = verifier.check_finish()
    assert ran is None and len(verifier.runs) == runs_before
    # test_whisper failed before the edits too, but the baseline never ran it: it is new.
    assert not decision.allow and "[not covered by the baseline run]" in decision.message


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("go", path=BASE_PATH) is None, reason="go is not installed")
def test_go_project_end_to_end(tmp_path: Path, sandbox) -> None:
    capture = json.loads((Path(__file__).parent / "fixtures" / "go_test_json.json").read_text())
    repo = tmp_path / "repo"
    for rel, text in capture["project"].items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    workspace = CopyWorkspace(repo, tmp_path / "state")
    settings = {**NO_CHECKS, "env": {"GOFLAGS": "-mod=mod", "GOPROXY": "off", "GOCACHE": str(tmp_path / "gocache")}}
    verifier = Verifier(workspace.path, sandbox, settings, changed_files=workspace.changed_files)
    base = verifier.baseline()
    assert {f.test_id for f in base.runs[0].failures} == {
        "example.com/sample::TestAddFails", "example.com/sample::TestTable/bad", "example.com/sample/sub::TestHalfPanics",
    }
    edit(workspace, "calc.go", "func Div(a, b int) int { return a / b }", "func Div(a, b int) int { return a / b }\n\nfunc Broken() int { return \"x\" }")
    after = verifier.run_tests()
    assert [r.scope for r in after.runs] == ["related: .", "full"]
    assert [(f.kind, f.file) for f in after.comparison.new.values()] == [("build", "calc.go")]
    assert not (workspace.path / SCRATCH_DIR).exists()


def test_loop_helpers_take_the_baseline_once_and_gate_finish(workspace: CopyWorkspace, sandbox, base_settings) -> None:
    events: list[object] = []
    ctx = ToolContext(workspace=workspace, sandbox=sandbox, emit=events.append,
                      services={"verify_config": {**base_settings, **NO_CHECKS}})
    first = ensure_baseline(ctx)
    assert first is not None and first.phase == "baseline"
    assert ensure_baseline(ctx) is None
    edit(workspace, "pkg/calc.py", "return a * b", "return a ** b")
    decision = gate_finish(ctx)
    assert not decision.allow and "tests/test_calc.py::test_mul" in decision.message
    phases = [e.phase for e in events if isinstance(e, VerificationRan)]
    assert phases == ["baseline", "final"]
    final = events[-1]
    assert isinstance(final, VerificationRan) and final.new_failures == ["tests/test_calc.py::test_mul"]


def test_failures_the_baseline_never_ran_are_checked_on_the_original_files(
    workspace: CopyWorkspace, sandbox, base_settings
) -> None:
    events: list[object] = []
    ctx = ToolContext(workspace=workspace, sandbox=sandbox, emit=events.append,
                      services={"verify_config": {**base_settings, **NO_CHECKS, "baseline_target": "tests/test_calc.py"}})
    ensure_baseline(ctx)
    edit(workspace, "pkg/text.py", "return s.upper()\n\n\ndef whisper", "return s.title()\n\n\ndef whisper")
    edited = workspace.read("pkg/text.py")
    observation = RunTests().run(RunTestsArgs(target="tests/test_text.py"), ctx)
    scopes = [r["scope"] for r in observation.data["runs"]]
    assert scopes == ["tests/test_text.py", "before the edits: tests/test_text.py"]
    # test_whisper failed on the original files too: it is not the agent's doing.
    assert observation.data["new_failures"] == []
    assert observation.data["still_failing"] == ["tests/test_text.py::test_whisper"]
    assert workspace.read("pkg/text.py") == edited and workspace.changed_files() == ["pkg/text.py"]
    assert gate_finish(ctx).allow
    # Each file is backfilled once.
    again = RunTests().run(RunTestsArgs(target="tests/test_text.py"), ctx)
    assert [r["scope"] for r in again.data["runs"]] == ["tests/test_text.py"]


def test_a_failure_that_needs_company_is_run_alone_after_the_edits_before_it_is_blamed(
    tmp_path: Path, write_tree, sandbox, base_settings
) -> None:
    # test_order_b passes alone but fails after test_order_a has run in the same process.
    repo = write_tree(tmp_path / "repo", {
        **PROJECT,
        "tests/test_order_a.py": ("import os\nfrom pkg import text\n\n\ndef test_sets():\n"
                                  "    os.environ['POLLUTED'] = '1'\n    assert text.shout('a') == 'A'\n"),
        "tests/test_order_b.py": ("import os\nfrom pkg import text\n\n\ndef test_clean():\n"
                                  "    assert 'POLLUTED' not in os.environ and text.shout('b') == 'B'\n"),
    })
    workspace = CopyWorkspace(repo, tmp_path / "state")
    events: list[object] = []
    ctx = ToolContext(workspace=workspace, sandbox=sandbox, emit=events.append,
                      services={"verify_config": {**base_settings, **NO_CHECKS,
                                                  "baseline_target": "tests/test_calc.py"}})
    ensure_baseline(ctx)
    edit(workspace, "pkg/text.py", "def shout(s):\n", "def shout(s):  # louder\n")
    decision = gate_finish(ctx)
    final = events[-1]
    assert isinstance(final, VerificationRan)
    scopes = [run.scope for run, _ in ctx.services["verifier"].runs]
    assert "alone after the edits: tests/test_order_b.py" in scopes
    assert final.new_failures == []
    assert decision.allow, decision.message


def test_stashed_edits_survive_a_crash_mid_run(tmp_path: Path, sandbox) -> None:
    (tmp_path / "a.py").write_text("edited\n")
    (tmp_path / "new.py").write_text("added by the agent\n")
    originals = {"a.py": b"original\n"}
    with pytest.raises(RuntimeError), original_tree(tmp_path, ["a.py", "new.py"], originals.get):
        assert (tmp_path / "a.py").read_text() == "original\n" and not (tmp_path / "new.py").exists()
        raise RuntimeError("killed")
    assert (tmp_path / "a.py").read_text() == "edited\n" and (tmp_path / "new.py").exists()
    # A process that died inside the block leaves the stash; the next verifier restores it.
    stash = original_tree(tmp_path, ["a.py"], originals.get)
    stash.__enter__()
    assert (tmp_path / "a.py").read_text() == "original\n"
    verifier = Verifier(tmp_path, sandbox, NO_CHECKS)
    assert verifier.recovered == ["a.py"] and (tmp_path / "a.py").read_text() == "edited\n"
    assert not (tmp_path / SCRATCH_DIR).exists()


def test_finishing_without_edits_runs_nothing(workspace: CopyWorkspace, make) -> None:
    verifier = make()
    decision, ran = verifier.check_finish()
    assert decision.allow and ran is None and verifier.runs == []
    assert "nothing to verify" in decision.message


GOOD_RELATED = "from pkg import calc\n\n\ndef test_mul():\n    assert calc.mul(2, 3) == 6\n"


def sleeper(seconds: float) -> str:
    """A test related to pkg/calc.py that takes `seconds`."""
    return f"import time\n\nfrom pkg import calc\n\n\ndef test_wait():\n    time.sleep({seconds})\n"


def gate_a_related_file(tmp_path: Path, write_tree, sandbox, config: dict[str, Any],
                        file: str, before: str, after: str) -> tuple[GateDecision, Verifier]:
    """Edit pkg/calc.py, and `file`, a test importing it, from `before` to `after`."""
    repo = write_tree(tmp_path / "repo", {**PROJECT, file: before})
    workspace = CopyWorkspace(repo, tmp_path / "state")
    ctx = ToolContext(workspace=workspace, sandbox=sandbox, emit=lambda _: None,
                      services={"verify_config": config})
    ensure_baseline(ctx)
    if after != before:
        workspace.write(file, after.encode())
    edit(workspace, "pkg/calc.py", "return a * b", "return b * a")
    decision = gate_finish(ctx)
    verifier = ctx.services["verifier"]
    assert isinstance(verifier, Verifier)
    return decision, verifier


@pytest.mark.parametrize("hang_before", [True, False])
def test_a_related_run_that_times_out_is_timed_on_the_original_files(
    tmp_path: Path, write_tree, sandbox, base_settings, hang_before: bool
) -> None:
    # test_slow imports pkg.calc, so it is related to an edit there; the baseline never ran it.
    config = {**base_settings, **NO_CHECKS, "baseline_target": "tests/test_text.py", "test_timeout_s": 8}
    decision, verifier = gate_a_related_file(tmp_path, write_tree, sandbox, config, "tests/test_slow.py",
                                             sleeper(60) if hang_before else GOOD_RELATED, sleeper(60))
    timed = [(r.outcome, pristine) for r, pristine in verifier.runs if r.scope.startswith("related:")]
    assert timed == [("timeout", False), ("timeout" if hang_before else "passed", True)]
    # Timing out before the edits too, it is how the tests were; otherwise the edits did it.
    assert decision.allow is hang_before, decision.message


def test_a_related_run_near_its_time_limit_on_the_original_files_does_not_blame_the_edits(
    tmp_path: Path, write_tree, sandbox, base_settings
) -> None:
    # sympy-18835: after a correct edit the related run timed out at 900 s; on the original
    # files it had completed in 877 s under the same load. That is no evidence of a slowdown.
    config = {**base_settings, **NO_CHECKS, "baseline_target": "tests/test_text.py", "test_timeout_s": 8}
    decision, verifier = gate_a_related_file(tmp_path, write_tree, sandbox, config, "tests/test_slow.py",
                                             sleeper(5), sleeper(60))
    before = [r for r, pristine in verifier.runs if pristine and r.scope.startswith("related:")]
    assert decision.allow, decision.message
    if before[0].outcome != "timeout":  # on a machine too loaded to finish 5 s in 8, it is that case
        assert "too near to blame the edits" in before[0].note
        # It is reported as not completing, before and after, rather than as passing.
        assert [f.kind for f in decision.comparison.still_failing.values()].count("timeout") == 1


@pytest.mark.parametrize("crash_before", [True, False])
def test_a_related_run_that_crashes_the_runner_is_tried_on_the_original_files(
    tmp_path: Path, write_tree, sandbox, base_settings, crash_before: bool
) -> None:
    # The runner dies while collecting test_boom (sympy 1.0's runner did so on a test file
    # that did not import): no per-test result, and the baseline never ran that file.
    boom = "import os\n\nfrom pkg import calc\n\nos._exit(3)\n"
    config = {**base_settings, **NO_CHECKS, "baseline_target": "tests/test_text.py"}
    decision, verifier = gate_a_related_file(tmp_path, write_tree, sandbox, config, "tests/test_boom.py",
                                             boom if crash_before else GOOD_RELATED, boom)
    related = [(any(f.kind == "crash" for f in r.failures), pristine)
               for r, pristine in verifier.runs if r.scope.startswith("related:")]
    assert related == [(True, False), (crash_before, True)]
    # Crashing before the edits too, it is how the tests were; otherwise the edits did it.
    assert decision.allow is crash_before, decision.message


@pytest.mark.parametrize(("own_seed", "seen"), [(None, "0"), ("7", "7")])
def test_every_run_gets_one_hash_seed_unless_the_project_sets_its_own(
    workspace: CopyWorkspace, make, base_settings, own_seed: str | None, seen: str
) -> None:
    # A test whose result depends on str hashing must not pass in the baseline and fail
    # after the edits only because Python drew another seed.
    workspace.write("tests/test_seed.py", (
        "import os\n\n\ndef test_seed():\n"
        f"    assert os.environ.get('PYTHONHASHSEED') == {seen!r}\n"
    ).encode())
    env = {**base_settings["env"], **({"PYTHONHASHSEED": own_seed} if own_seed else {})}
    run = make(env=env).run_tests("tests/test_seed.py").runs[0]
    assert run.counts == "1 passed, 0 failed, 0 skipped"
