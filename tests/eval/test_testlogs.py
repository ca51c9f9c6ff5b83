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
    output = (DATA / "sympy_bin_test.txt").read_text()
    statuses = parse_sympy(output)
    assert statuses
    assert set(statuses.values()) <= {"PASSED", "FAILED", "ERROR", "XFAIL", "SKIPPED"}
    assert "FAILED" in statuses.values() or "ERROR" in statuses.values()
