"""The baseline comparison and the finish gate, as pure functions over recorded runs."""

from __future__ import annotations

from codeloop.verify.baseline import Ledger, compare
from codeloop.verify.gate import GateRound, check_finish
from codeloop.verify.models import Failure, RunResult


def failing(test_id: str, message: str = "assert 1 == 2") -> Failure:
    return Failure(kind="test", test_id=test_id, message=message, file="tests/test_a.py", line=3, tool="pytest")




def suite_run(failures: list[Failure], passed: list[str], scope: str = "full") -> RunResult:
    return RunResult(name="pytest", category="test", command="pytest", scope=scope, failures=failures,
                     passed=passed, outcome="failed" if failures else "passed")


def lint_run(failures: list[Failure], scope: str = "full") -> RunResult:
    return RunResult(name="ruff", category="lint", command="ruff check", scope=scope, failures=failures)


def ledger(*runs: RunResult) -> Ledger:
    out = Ledger()
    for run in runs:
        out.record(run)
    return out


BASE = ledger(suite_run([failing("t::old_broken")], ["t::a", "t::b"]))


def test_compare_new_fixed_and_still_failing() -> None:
    latest = ledger(
        suite_run([failing("t::old_broken")], ["t::a", "t::b"]),
        suite_run([failing("t::a"), failing("t::brand_new")], ["t::old_broken"], scope="t"),
    )
    result = compare(BASE, latest)
    assert set(result.new) == {"t::a", "t::brand_new"}
    assert result.unbaselined == {"t::brand_new"}
    assert set(result.fixed) == {"t::old_broken"}
    assert result.still_failing == {}


def test_tests_of_a_file_that_did_not_import_before_say_no_baseline_was_possible() -> None:
    # The test patch imports a name only the fix adds: at baseline the file is one error.
    error = Failure(kind="error", test_id="tests/test_ops.py", file="tests/test_ops.py",
                    message="ImportError: cannot import name 'push'", tool="pytest")
    base = ledger(suite_run([error], ["tests/test_other.py::test_ok"]))
    latest = ledger(suite_run([failing("tests/test_ops.py::test_mean"), failing("tests/test_new.py::test_x")],
                              ["tests/test_ops.py::test_push"]))
    result = compare(base, latest)
    assert result.unbaselined == {"tests/test_ops.py::test_mean", "tests/test_new.py::test_x"}
    assert result.unimportable == {"tests/test_ops.py::test_mean"}
    decision = check_finish(base, latest, [])
    assert not decision.allow
    assert "test_mean (tests/test_a.py:3) - assert 1 == 2 [no baseline possible: its file did not import" \
        in decision.message
    assert "test_x (tests/test_a.py:3) - assert 1 == 2 [not covered by the baseline run]" in decision.message


def test_findings_are_matched_without_line_numbers_and_counted() -> None:
    unused = Failure(kind="lint", file="app.py", line=3, rule="F401", message="`os` imported but unused", tool="ruff")
    moved = unused.model_copy(update={"line": 9})
    second = Failure(kind="lint", file="app.py", line=20, rule="E501", message="Line too long (120 > 100)", tool="ruff")
    third = second.model_copy(update={"line": 30, "message": "Line too long (130 > 100)"})
    base = ledger(lint_run([unused, second]))
    result = compare(base, ledger(lint_run([moved, second, third])))
    assert list(result.new) == ["ruff:app.py:lint:E501:Line too long (N > N)#2"]
    assert len(result.still_failing) == 2


def test_a_finding_disappears_when_a_full_run_no_longer_reports_it() -> None:
    finding = Failure(kind="lint", file="app.py", line=3, rule="F821", message="Undefined name `x`", tool="ruff")
    latest = ledger(lint_run([finding]), lint_run([]))
    assert compare(ledger(lint_run([finding])), latest).fixed


def test_usage_errors_teach_nothing() -> None:
    latest = BASE.copy()
    latest.record(RunResult(name="pytest", category="test", command="pytest nope", scope="nope", outcome="usage",
                            failures=[failing("t::a")]))
    assert compare(BASE, latest).new == {}


def test_gate_blocks_new_failures_with_a_listing() -> None:
    latest = ledger(suite_run([failing("t::old_broken"), failing("t::a", "assert 'x' in ''")], ["t::b"]))
    decision = check_finish(BASE, latest, [])
    assert not decision.allow and not decision.escalate
    assert "t::a" in decision.message and "assert 'x' in ''" in decision.message
    assert "already failing" in decision.message  # old_broken does not block
    assert [f.test_id for f in decision.blocking] == ["t::a"]


def test_gate_allows_when_failures_are_fixed_or_were_there_before() -> None:
    fixed = ledger(suite_run([], ["t::a", "t::b", "t::old_broken"]))
    decision = check_finish(BASE, fixed, [])
    assert decision.allow and "Fixed (1): t::old_broken" in decision.message
    assert check_finish(BASE, BASE.copy(), []).allow


def test_same_failures_after_a_fix_attempt_escalate() -> None:
    latest = ledger(suite_run([failing("t::a")], ["t::b"]))
    first = check_finish(BASE, latest, [], fingerprint="edit-1")
    assert not first.allow and not first.escalate
    history = [GateRound(frozenset(f.base_key() for f in first.blocking), "edit-1")]
    # Finishing again without editing is not a fix attempt: blocked again, not escalated.
    assert not check_finish(BASE, latest, history, fingerprint="edit-1").escalate
    again = check_finish(BASE, latest, history, fingerprint="edit-2")
    assert again.escalate and not again.allow
    assert "same failures came back" in again.message


def test_different_failures_each_round_escalate_after_the_maximum() -> None:
    history: list[GateRound] = []
    for round_no in range(1, 4):
        latest = ledger(suite_run([failing(f"t::new{round_no}")], []))
        decision = check_finish(BASE, latest, history, max_fix_rounds=3, fingerprint=f"e{round_no}")
        assert not decision.allow and not decision.escalate and decision.round == round_no
        history.append(GateRound(frozenset(f.base_key() for f in decision.blocking), f"e{round_no}"))
    last = check_finish(BASE, ledger(suite_run([failing("t::new4")], [])), history, max_fix_rounds=3, fingerprint="e4")
    assert last.escalate and "maximum is 3" in last.message


def test_security_blocks_only_new_high_findings_and_lint_warnings_never() -> None:
    high = Failure(kind="security", file="a.py", line=6, rule="B602", message="shell=True", severity="high", tool="bandit")
    low = Failure(kind="security", file="a.py", line=10, rule="B101", message="assert", severity="low", tool="bandit")
    warn = Failure(kind="lint", file="a.js", line=1, rule="no-console", message="console", severity="warning", tool="eslint")
    base = ledger(lint_run([]))
    only_low = ledger(RunResult(name="bandit", category="security", command="bandit", failures=[low]), lint_run([warn]))
    decision = check_finish(base, only_low, [])
    assert decision.allow and "B101" in decision.message and "no-console" in decision.message
    with_high = ledger(RunResult(name="bandit", category="security", command="bandit", failures=[low, high]))
    blocked = check_finish(base, with_high, [])
    assert not blocked.allow and [f.rule for f in blocked.blocking] == ["B602"]
    assert check_finish(base, with_high, [], block_on_security=False).allow


def test_gate_kinds_are_configurable() -> None:
    finding = Failure(kind="lint", file="a.py", line=1, rule="F401", message="unused", tool="ruff")
    latest = ledger(lint_run([finding]))
    assert not check_finish(Ledger(), latest, []).allow
    assert check_finish(Ledger(), latest, [], block_on=["test"]).allow
