"""Parsers fed with output produced right here by the real tools on tiny projects."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from codeloop.verify.parsers import PARSERS

PYTEST_PROJECT = {
    "pkg/__init__.py": "",
    "pkg/calc.py": "def add(a, b):\n    return a + b\n",
    "tests/test_calc.py": (
        "import pytest\n"
        "from pkg.calc import add\n\n"
        "def test_add_ok():\n    assert add(1, 2) == 3\n\n"
        "def test_add_wrong():\n    assert add(1, 2) == 4\n\n"
        "@pytest.fixture\ndef broken():\n    raise RuntimeError('fixture exploded')\n\n"
        "def test_uses_broken_fixture(broken):\n    pass\n\n"
        "@pytest.mark.skip(reason='later')\ndef test_skipped():\n    pass\n\n"
        "@pytest.mark.parametrize('n', [1, 2])\ndef test_param(n):\n    assert n == 1\n\n"
        "class TestGroup:\n    def test_in_class(self):\n        assert add('a', 'b') == 'ab'\n"
    ),
    "tests/test_broken_import.py": "import does_not_exist_anywhere\n\ndef test_never():\n    pass\n",
}


def run(command: list[str], cwd: Path) -> str:
    done = subprocess.run(command, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, check=False)
    return done.stdout.decode()


def test_pytest_junit_from_a_real_run(tmp_path: Path, write_tree) -> None:
    root = write_tree(tmp_path, PYTEST_PROJECT)
    report = tmp_path / "junit.xml"
    output = run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-o", "junit_family=xunit1",
                  f"--junitxml={report}", "--continue-on-collection-errors", "-q", "tests"], root)
    parsed = PARSERS["junit"](output, report.read_text(), root)

    failures = {f.test_id: f for f in parsed.failures}
    assert set(failures) == {
        "tests/test_calc.py::test_add_wrong",
        "tests/test_calc.py::test_uses_broken_fixture",
        "tests/test_calc.py::test_param[2]",
        "tests/test_broken_import.py",
    }
    assert set(parsed.passed) == {
        "tests/test_calc.py::test_add_ok",
        "tests/test_calc.py::test_param[1]",
        "tests/test_calc.py::TestGroup::test_in_class",
    }
    assert parsed.skipped == 1
    wrong = failures["tests/test_calc.py::test_add_wrong"]
    assert (wrong.kind, wrong.file, wrong.line) == ("test", "tests/test_calc.py", 8)
    assert "assert 3 == 4" in wrong.message
    assert "AssertionError" in wrong.trace
    fixture = failures["tests/test_calc.py::test_uses_broken_fixture"]
    assert fixture.kind == "error" and "fixture exploded" in fixture.trace
    broken = failures["tests/test_broken_import.py"]
    assert broken.kind == "error" and broken.file == "tests/test_broken_import.py" and broken.line == 1
    assert "No module named 'does_not_exist_anywhere'" in broken.message


LINT_PROJECT = {
    "app.py": (
        "import os\nimport subprocess\n\n\n"
        "def run(cmd):\n    return subprocess.call(cmd, shell=True)\n\n\n"
        "def check(x):\n    assert x\n    return undefined_name\n"
    ),
    "bad.py": "def broken(:\n    pass\n",
}


@pytest.mark.skipif(shutil.which("ruff") is None, reason="ruff is not installed")
def test_ruff_json_from_a_real_run(tmp_path: Path, write_tree) -> None:
    root = write_tree(tmp_path, LINT_PROJECT)
    output = run(["ruff", "check", "--isolated", "--output-format", "json", "."], root)
    parsed = PARSERS["ruff"](output, None, root)
    found = {(f.file, f.line, f.rule, f.kind) for f in parsed.failures}
    assert ("app.py", 1, "F401", "lint") in found
    assert ("app.py", 11, "F821", "lint") in found
    assert any(f.file == "bad.py" and f.kind == "build" and f.rule == "syntax" for f in parsed.failures)
    assert all(f.tool == "ruff" for f in parsed.failures)


@pytest.mark.skipif(shutil.which("bandit") is None, reason="bandit is not installed")
def test_bandit_json_from_a_real_run(tmp_path: Path, write_tree) -> None:
    root = write_tree(tmp_path, LINT_PROJECT)
    report = tmp_path / "bandit.json"
    run(["bandit", "-r", ".", "-f", "json", "-o", str(report), "-q"], root)
    parsed = PARSERS["bandit"]("", report.read_text(), root)
    by_rule = {f.rule.split()[0]: f for f in parsed.failures if f.kind == "security" and f.rule}
    assert by_rule["B602"].severity == "high" and (by_rule["B602"].file, by_rule["B602"].line) == ("app.py", 6)
    assert by_rule["B101"].severity == "low"
    assert "subprocess" in by_rule["B602"].trace
    unscannable = [f for f in parsed.failures if f.kind == "build"]
    assert [f.file for f in unscannable] == ["bad.py"]


@pytest.mark.skipif(shutil.which("flake8") is None, reason="flake8 is not installed")
def test_flake8_from_a_real_run(tmp_path: Path, write_tree) -> None:
    root = write_tree(tmp_path, LINT_PROJECT)
    parsed = PARSERS["flake8"](run(["flake8", "--isolated", "."], root), None, root)
    found = {(f.file, f.line, f.rule) for f in parsed.failures}
    assert {("app.py", 1, "F401"), ("app.py", 11, "F821"), ("bad.py", 1, "E999")} <= found


def test_generic_finds_locations_in_real_python_and_mypy_output(tmp_path: Path, write_tree) -> None:
    root = write_tree(tmp_path, {**LINT_PROJECT, "typed.py": 'def f() -> int:\n    return "x"\n'})
    traceback = run([sys.executable, "-c", "import app; app.check(0)"], root)
    parsed = PARSERS["generic"](traceback, None, root)
    assert [(f.file, f.line) for f in parsed.failures] == [("app.py", 10)]
    compile_error = run([sys.executable, "-m", "py_compile", "bad.py"], root)
    assert [(f.file, f.line) for f in PARSERS["generic"](compile_error, None, root).failures] == [("bad.py", 1)]
    mypy_out = run([sys.executable, "-m", "mypy", "--no-incremental", "--cache-dir", str(tmp_path / ".mypy"), "typed.py"], root)
    found = PARSERS["generic"](mypy_out, None, root).failures
    assert [(f.file, f.line) for f in found] == [("typed.py", 2)]
    assert "Incompatible return value type" in found[0].message


def test_generic_reports_unstructured_when_nothing_matches(tmp_path: Path) -> None:
    parsed = PARSERS["generic"]("Segmentation fault (core dumped)\n", None, tmp_path)
    assert parsed.failures == [] and not parsed.structured
