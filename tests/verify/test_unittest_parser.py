"""The unittest parser on output produced by a real `python -m unittest -v` run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from codeloop.verify.parsers import PARSERS


def test_real_unittest_verbose_output(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "__init__.py").write_text("")
    (tmp_path / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (tmp_path / "tests" / "test_calc.py").write_text(
        "import unittest\nfrom calc import add\n\n\nclass CalcTest(unittest.TestCase):\n"
        "    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n\n"
        "    def test_zero(self):\n        self.assertEqual(add(0, 0), 0)\n\n"
        "    def test_boom(self):\n        raise RuntimeError('boom')\n\n"
        "    @unittest.skip('later')\n    def test_later(self):\n        pass\n")
    out = subprocess.run([sys.executable, "-m", "unittest", "discover", "-v"], cwd=tmp_path,
                         capture_output=True, text=True, check=False)
    parsed = PARSERS["unittest"](out.stdout + out.stderr, None, tmp_path)
    assert parsed.structured
    assert parsed.passed == ["tests/test_calc.py::CalcTest::test_zero"]
    assert parsed.skipped == 1
    by_id = {f.test_id: f for f in parsed.failures}
    fail = by_id["tests/test_calc.py::CalcTest::test_add"]
    assert fail.kind == "test" and "AssertionError" in fail.message
    assert fail.file == "tests/test_calc.py" and fail.line == 7
    boom = by_id["tests/test_calc.py::CalcTest::test_boom"]
    assert boom.kind == "error" and "boom" in boom.message
