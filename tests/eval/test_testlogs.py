"""Parsers on output captured from real SWE-bench test runs (marshmallow, requests)."""

from __future__ import annotations

from pathlib import Path

from codeloop.eval.swebench.testlogs import network_failures, parse_pytest, parse_sympy

DATA = Path(__file__).parent / "data"


def test_pytest_summary_with_spaces_in_parametrized_ids() -> None:
    statuses = parse_pytest((DATA / "pytest_marshmallow_1359_empty.txt").read_text())
    full = "tests/test_fields.py::TestErrorMessages::test_make_error[required-Missing data for required field.]"
    assert statuses[full] == "PASSED"
    # The dataset's ids are cut at the first space; the cut name answers too.
    assert statuses["tests/test_fields.py::TestErrorMessages::test_make_error[required-Missing"] == "PASSED"
    assert statuses["tests/test_fields.py::TestParentAndName::test_datetime_list_inner_format"] == "FAILED"
    assert sum(1 for s in statuses.values() if s == "FAILED") >= 1


def test_pytest_network_failures_are_recognised() -> None:
    output = (DATA / "pytest_requests_1657_gold.txt").read_text()
    statuses = parse_pytest(output)
    network = network_failures(output)
    assert "test_requests.py::RequestsTestCase::test_BASICAUTH_TUPLE_HTTP_200_OK_GET" in network
    assert statuses["test_requests.py::RequestsTestCase::test_BASICAUTH_TUPLE_HTTP_200_OK_GET"] == "FAILED"
    passed = [t for t, s in statuses.items() if s == "PASSED"]
    assert passed and not network & set(passed)


def test_pytest_ignores_skip_reasons_and_colour() -> None:
    output = ("SKIPPED [1] tests/test_x.py:10: needs py2\n"
              "\x1b[32mPASSED\x1b[0m tests/test_x.py::test_ok\n"
              "XFAIL tests/test_x.py::test_known - reason\n"
              "ERROR tests/test_y.py - ImportError: boom\n")
    assert parse_pytest(output) == {"tests/test_x.py::test_ok": "PASSED",
                                    "tests/test_x.py::test_known": "XFAIL",
                                    "tests/test_y.py": "ERROR"}


def test_sympy_verbose_output() -> None:
    """sympy 1.1's `bin/test -C --verbose` on sympy__sympy-13852 without the fix."""
    statuses = parse_sympy((DATA / "sympy_bin_test.txt").read_text())
    assert statuses["test_zeta_eval"] == "PASSED"
    assert statuses["test_polylog_values"] == "FAILED"
    assert statuses["test_zeta_series"] == "ERROR"
    # The last test's line carries the run's "[FAIL]" marker; the test is still read.
    assert statuses["test_issue_10475"] == "ERROR"
    assert len(statuses) == 11


def test_pytest_verbose_lines_of_an_old_pytest_without_a_pass_summary() -> None:
    """pytest 3.3 (astropy 1.3) with `-rA -vv`: passes appear only as per-test lines."""
    output = (DATA / "pytest33_astropy_7008_empty.txt").read_text()
    statuses = parse_pytest(output)
    assert statuses["astropy/constants/tests/test_prior_version.py::test_b_wien"] == "PASSED"
    assert statuses["astropy/constants/tests/test_prior_version.py::test_context_manager"] == "FAILED"
    assert len(statuses) == 9
    newer = parse_pytest("tests/a.py::test_x[a b] PASSED                     [ 50%]\n"
                         "tests/a.py::test_y FAILED [100%]\n"
                         "FAILED tests/a.py::test_x[a b] - teardown broke\n")
    assert newer == {"tests/a.py::test_x[a b]": "FAILED", "tests/a.py::test_x[a": "FAILED",
                     "tests/a.py::test_y": "FAILED"}
