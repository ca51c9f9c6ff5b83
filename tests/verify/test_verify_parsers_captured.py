"""Parsers fed with real output captured from go, cargo, tsc and eslint (see each fixture's
`provenance`, `tool` and `command`; the sample project's sources are inside the fixture)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from codeloop.verify.models import ParsedOutput
from codeloop.verify.parsers import PARSERS

FIXTURES = Path(__file__).parent / "fixtures"


def load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / f"{name}.json").read_text())
    return data


def parse(name: str, parser: str, root: Path | None = None) -> ParsedOutput:
    capture = load(name)
    return PARSERS[parser](capture["output"], None, root or Path(capture["cwd"]))


def locations(parsed: ParsedOutput) -> set[tuple[str | None, str | None, int | None]]:
    return {(f.test_id, f.file, f.line) for f in parsed.failures}


def test_go_test_json_failures_subtests_panics_and_passes(tmp_path: Path) -> None:
    capture = load("go_test_json")
    # The parser maps package import paths to directories through go.mod.
    (tmp_path / "go.mod").write_text(capture["project"]["go.mod"])
    parsed = PARSERS["go-json"](capture["output"].replace(capture["cwd"], str(tmp_path)), None, tmp_path)
    assert locations(parsed) == {
        ("example.com/sample::TestAddFails", "calc_test.go", 13),
        ("example.com/sample::TestTable/bad", "calc_test.go", 21),
        ("example.com/sample/sub::TestHalfPanics", "sub/sub_test.go", 7),
    }
    by_id = {f.test_id: f for f in parsed.failures}
    assert by_id["example.com/sample::TestAddFails"].message == "Add(2, 2) = 4, want 5"
    assert by_id["example.com/sample/sub::TestHalfPanics"].message.startswith("panic: assignment to entry in nil map")
    assert "goroutine" in by_id["example.com/sample/sub::TestHalfPanics"].trace
    assert set(parsed.passed) == {"example.com/sample::TestAddPasses", "example.com/sample::TestTable/ok"}
    assert parsed.skipped == 1


def test_go_test_json_build_failure_is_reported_at_the_compiler_location(tmp_path: Path) -> None:
    capture = load("go_test_json_build_failed")
    (tmp_path / "go.mod").write_text("module example.com/sample\n\ngo 1.19\n")
    parsed = PARSERS["go-json"](capture["output"], None, tmp_path)
    build = [f for f in parsed.failures if f.kind == "build"]
    assert [(f.file, f.line) for f in build] == [("calc.go", 3)]
    assert "mismatched types int and untyped string" in build[0].message
    assert [f.test_id for f in parsed.failures if f.kind == "test"] == ["example.com/sample/sub::TestHalfPanics"]


def test_cargo_test_failures_across_targets() -> None:
    parsed = parse("cargo_test_failures", "cargo")
    assert locations(parsed) == {
        ("src/lib.rs::tests::adds_wrongly", "src/lib.rs", 20),
        ("src/lib.rs::tests::divides_by_zero", "src/lib.rs", 6),
        ("tests/integration.rs::integration_fails", "tests/integration.rs", 9),
    }
    by_id = {f.test_id: f for f in parsed.failures}
    assert "left: 4" in by_id["src/lib.rs::tests::adds_wrongly"].message
    assert by_id["tests/integration.rs::integration_fails"].message == "expected a non-empty vector"
    assert set(parsed.passed) == {"src/lib.rs::tests::adds_small_numbers", "tests/integration.rs::integration_passes"}
    assert parsed.skipped == 1


def test_cargo_compile_error_points_at_the_source() -> None:
    parsed = parse("cargo_test_compile_error", "cargo")
    assert [(f.kind, f.file, f.line, f.rule) for f in parsed.failures] == [("build", "src/lib.rs", 2, "E0277")]
    assert parsed.failures[0].message == "cannot add `&str` to `i32`"


def test_tsc_pretty_false_diagnostics() -> None:
    parsed = parse("tsc_pretty_false", "tsc")
    assert {(f.file, f.line, f.rule) for f in parsed.failures} == {
        ("src/index.ts", 1, "TS2305"),
        ("src/index.ts", 3, "TS2322"),
        ("src/math.ts", 5, "TS2345"),
        ("src/math.ts", 8, "TS2552"),
    }
    assert all(f.kind == "type" and f.severity == "error" for f in parsed.failures)


def test_eslint_json_rules_severities_and_parse_errors() -> None:
    parsed = parse("eslint_json", "eslint")
    found = {(f.file, f.line, f.rule, f.severity, f.kind) for f in parsed.failures}
    assert ("lib/app.js", 6, "eqeqeq", "error", "lint") in found
    assert ("lib/app.js", 7, "no-console", "warning", "lint") in found
    assert ("lib/broken.js", 2, "syntax", "error", "build") in found
    assert len(parsed.failures) == 6
    assert not any(f.file == "lib/ok.js" for f in parsed.failures)


def test_structured_parsers_say_so_when_handed_something_else(tmp_path: Path) -> None:
    noise = "sh: 1: tool: not found\n"
    for parser in ("eslint", "ruff", "bandit", "semgrep", "junit"):
        assert not PARSERS[parser](noise, None, tmp_path).structured
    assert not PARSERS["go-json"](noise, None, tmp_path).structured
    assert not PARSERS["cargo"](noise, None, tmp_path).structured


def test_semgrep_json_severities() -> None:
    parsed = parse("semgrep_json", "semgrep")
    assert {(f.rule, f.file, f.line, f.severity) for f in parsed.failures} == {
        ("subprocess-shell-true", "app.py", 6, "high"),
        ("bare-assert", "app.py", 10, "medium"),
    }
    assert all(f.kind == "security" and f.trace == "" for f in parsed.failures)


def test_sympy_bin_test_verbose_report() -> None:
    parsed = parse("sympy_bin_test", "sympy")
    by_id = {f.test_id: f for f in parsed.failures}
    assert set(by_id) == {
        "sympy/core/tests/test_basic.py::test_structure", "sympy/core/tests/test_basic.py::test_equality",
    }
    structure = by_id["sympy/core/tests/test_basic.py::test_structure"]
    assert (structure.kind, structure.file, structure.line) == ("test", "sympy/core/tests/test_basic.py", 25)
    assert structure.message == "AssertionError: made to fail"
    equality = by_id["sympy/core/tests/test_basic.py::test_equality"]
    assert equality.kind == "error" and equality.message == "NameError: name 'undefined_helper' is not defined"
    # ok and X (passed though expected to fail) pass; s, f skip.
    assert "sympy/core/tests/test_basic.py::test_has" in parsed.passed
    assert "sympy/core/tests/test_rules.py::test_Transform" in parsed.passed
    assert len(parsed.passed) == 12 and parsed.skipped == 2  # "11 passed", 1 xpassed
