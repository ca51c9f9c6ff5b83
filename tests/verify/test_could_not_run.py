"""A test run that never ran a test is "could not run the tests: <reason>": never a pass, never
a fix, and never a way through the finish gate."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from codeloop.sandbox.base import CommandResult
from codeloop.tools.base import ToolContext
from codeloop.tools.verify_tools import RunTests, RunTestsArgs, ensure_baseline, gate_finish
from codeloop.verify.baseline import Ledger, compare
from codeloop.verify.commands import CommandSpec, pytest_spec
from codeloop.verify.models import Failure, ParsedOutput, RunResult
from codeloop.verify.not_run import could_not_run
from codeloop.verify.verification import Verification
from codeloop.verify.verifier import Verifier
from codeloop.workspace.copy import CopyWorkspace

PYTEST = pytest_spec("python3")
NO_CHECKS = {"lint": [], "security": [], "typecheck": []}


def result(code: int, output: str = "") -> CommandResult:
    return CommandResult(exit_code=code, output=output, duration_ms=1.0)


def collection_error(file: str) -> Failure:
    return Failure(kind="error", message="ImportError", test_id=file, file=file, tool="pytest")


@pytest.mark.parametrize(("code", "output", "targeted", "reason"), [
    (127, "sh: 1: python3: not found\n", False, "the test command was not found (exit 127): sh: 1: python3: not found"),
    (126, "sh: 1: ./run: Permission denied\n", True,
     "the test command is not executable (exit 126): sh: 1: ./run: Permission denied"),
    (1, "/venv/bin/python3: No module named pytest\n", True, "/venv/bin/python3: No module named pytest"),
    (4, "ImportError while loading conftest '/w/conftest.py'.\nconftest.py:1: in <module>\n"
        "    import numpy\nE   ModuleNotFoundError: No module named 'numpy'\n", False,
     "ImportError while loading conftest '/w/conftest.py': ModuleNotFoundError: No module named 'numpy'"),
    (5, "\nno tests ran in 0.01s\n", False, "no tests ran: the test command found no tests"),
    (0, "\nRan 0 tests in 0.000s\n\nOK\n", False, "no tests ran: the test command found no tests"),
    (0, "\nRan 0 tests in 0.000s\n\nOK\n", True, None),
])
def test_runs_that_ran_no_test_say_why(code: int, output: str, targeted: bool, reason: str | None) -> None:
    assert could_not_run(PYTEST, result(code, output), ParsedOutput(structured=False), targeted) == reason


def test_every_test_file_failing_to_import_is_not_a_test_result() -> None:
    parsed = ParsedOutput(failures=[collection_error("tests/test_a.py"), collection_error("tests/test_b.py")])
    why = could_not_run(PYTEST, result(1, "2 errors"), parsed, targeted=False)
    assert why is not None and why.startswith("no test file could be imported (2 failed)")
    # On chosen files it is a result: a test file the edits are meant to make importable.
    assert could_not_run(PYTEST, result(1, "2 errors"), parsed, targeted=True) is None


@pytest.mark.parametrize("parsed", [
    ParsedOutput(passed=["t::a"]),
    ParsedOutput(failures=[Failure(kind="test", message="boom", test_id="tests/t.py::a")]),
    ParsedOutput(failures=[collection_error("tests/t.py"),
                           Failure(kind="test", message="x", test_id="tests/u.py::b")]),
])
def test_runs_with_any_test_result_ran(parsed: ParsedOutput) -> None:
    assert could_not_run(PYTEST, result(1, "No module named pytest"), parsed, targeted=False) is None


def test_a_check_that_cannot_start_is_not_a_test_run() -> None:
    lint = CommandSpec(name="ruff", category="lint", command="ruff check .")
    assert could_not_run(lint, result(127, "ruff: not found"), ParsedOutput(structured=False), False) is None
    # A bad target stays a usage error, not "could not run".
    assert could_not_run(PYTEST, result(5, "no tests ran"), ParsedOutput(structured=False), True) is None


def crash(scope: str) -> RunResult:
    message = f"pytest on {scope} exited with code 1 and no failure it could parse"
    return RunResult(name="pytest", category="test", command="pytest", scope=scope, outcome="failed",
                     failures=[Failure(kind="crash", tool="pytest", message=message)])


def test_a_crashed_run_can_never_show_as_fixed() -> None:
    # The runner crashed on every run (the sandbox lacked pytest). The related run's crash was
    # recorded before the edits too; the full run after the edits, crashing just the same,
    # used to "clear" it: "FIXED so far" listed the crash and the model's "Tests pass." stood.
    base, latest = Ledger(), Ledger()
    for run in (crash("full"), crash("related: tests/test_calc.py")):
        base.record(run)
    for run in (crash("related: tests/test_calc.py"), crash("full")):
        latest.record(run)
    assert compare(base, latest).fixed == {}


def test_a_run_that_could_not_run_teaches_nothing() -> None:
    base, latest = Ledger(), Ledger()
    base.record(RunResult(name="pytest", category="test", command="pytest", passed=[],
                          failures=[Failure(kind="test", message="x", test_id="t.py::a")], outcome="failed"))
    latest.record(RunResult(name="pytest", category="test", command="pytest", outcome="not_run",
                            note="No module named pytest"))
    assert latest.entries == {} and compare(base, latest).fixed == {}
    text = Verification("after", [RunResult(name="pytest", category="test", command="pytest",
                                            outcome="not_run", note="No module named pytest")]).text()
    assert "could not run the tests: No module named pytest" in text and "FIXED" not in text


PROJECT = {
    "pyproject.toml": "[tool.pytest.ini_options]\n",
    "calc.py": "def add(a, b):\n    return a - b\n",
    "tests/test_calc.py": "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n",
}


def context(tmp_path: Path, write_tree, sandbox, test: str) -> ToolContext:
    repo = write_tree(tmp_path / "repo", PROJECT)
    workspace = CopyWorkspace(repo, tmp_path / "state")
    return ToolContext(workspace=workspace, sandbox=sandbox, emit=lambda _: None,
                       services={"verify_config": {**NO_CHECKS, "test": test}})


def fix(ctx: ToolContext) -> None:
    ctx.workspace.write("calc.py", b"def add(a, b):\n    return a + b\n")


@pytest.mark.parametrize("test", [f"{sys.executable} -m no_such_test_runner",
                                  "no-such-test-command-anywhere"])
def test_finish_never_passes_when_the_tests_cannot_run(tmp_path: Path, write_tree, sandbox, test: str) -> None:
    ctx = context(tmp_path, write_tree, sandbox, test)
    baseline = ensure_baseline(ctx)
    assert baseline is not None and baseline.not_run
    fix(ctx)
    observed = RunTests().run(RunTestsArgs(), ctx)
    assert not observed.ok and (observed.error or "").startswith("could not run the tests: ")
    assert "FIXED" not in observed.output
    decision = gate_finish(ctx)
    assert not decision.allow and decision.escalate  # no edit can fix the environment
    assert "could not run the tests: " in decision.message
    assert ("No module named no_such_test_runner" in decision.message) or ("exit 127" in decision.message)
    verifier = ctx.services["verifier"]
    assert isinstance(verifier, Verifier)
    assert "could not run the tests" in verifier.summary() and "NOT verified" in verifier.summary()


def test_edits_that_stop_the_tests_running_get_a_fix_round(tmp_path: Path, write_tree, sandbox,
                                                           base_settings) -> None:
    ctx = context(tmp_path, write_tree, sandbox, f"{sys.executable} -m pytest -p no:cacheprovider")
    ctx.services["verify_config"] = {**base_settings, **ctx.services["verify_config"]}
    ensure_baseline(ctx)
    ctx.workspace.write("conftest.py", b"import no_such_module_at_all\n")
    decision = gate_finish(ctx)
    assert not decision.allow and not decision.escalate, decision.message
    assert decision.message.startswith("Not finished: could not run the tests: ")
    assert "no_such_module_at_all" in decision.message


def test_the_summary_shows_each_command_once(tmp_path: Path, write_tree, sandbox, base_settings) -> None:
    ctx = context(tmp_path, write_tree, sandbox, "")
    ctx.services["verify_config"] = {**base_settings, **NO_CHECKS}
    ensure_baseline(ctx)
    fix(ctx)
    RunTests().run(RunTestsArgs(), ctx)
    assert gate_finish(ctx).allow
    verifier = ctx.services["verifier"]
    assert isinstance(verifier, Verifier)
    summary = verifier.summary()
    assert len(verifier.runs) >= 3 and summary.count("--junitxml") == 1, summary
