"""Verifier cost: parsing a big JUnit report, its overhead over plain pytest, related-test picking.

Usage: PYTHONPATH=src python benchmarks/verify_overhead.py [--tests N] [--suite N] [--repeats R]
       [--sympy-mirror MIRRORS/sympy+sympy/repo]
Goals: parse 5,000 test cases < 100 ms; run_tests within 15% of a plain pytest run;
related tests on sympy (~900 test files) < 1 s.

The three suite runs (plain pytest, pytest with the verifier's flags, `run_tests`) are
interleaved so that load from other processes falls on all of them alike.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from codeloop.sandbox.environment import BASE_PATH
from codeloop.sandbox.subprocess_backend import SubprocessSandbox
from codeloop.verify.parsers import PARSERS
from codeloop.verify.related import related_tests
from codeloop.verify.verifier import Verifier

ENV = {"PATH": f"{Path(sys.executable).parent}:{BASE_PATH}", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}


def stats(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def make_suite(root: Path, n: int) -> None:
    """`n` parametrised tests, one in ten failing, spread over ten files."""
    (root / "pyproject.toml").write_text("[tool.pytest.ini_options]\ntestpaths = ['tests']\n")
    (root / "tests").mkdir()
    per_file = n // 10
    for i in range(10):
        (root / "tests" / f"test_part{i}.py").write_text(
            "import pytest\n\n\n"
            f"@pytest.mark.parametrize('n', range({per_file}))\n"
            "def test_value(n):\n    assert n % 10 != 3, f'bad value {n}'\n"
        )


def timed(fn: Callable[[], object], repeats: int) -> list[float]:
    out = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        out.append((time.perf_counter() - start) * 1000)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tests", type=int, default=5000)
    parser.add_argument("--suite", type=int, default=1000, help="tests in the suite that is run")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--sympy-mirror", type=Path, default=None,
                        help="sympy's bare mirror (OWNER+NAME/repo) for the real-repository part")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        make_suite(root, args.tests)
        report = root / "junit.xml"
        subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "junit_family=xunit1",
                        f"--junitxml={report}", "tests"], cwd=root, env=ENV, capture_output=True, check=False)
        xml = report.read_text()
        report.unlink()
        parsed = PARSERS["junit"]("", xml, root)
        assert len(parsed.failures) + len(parsed.passed) == args.tests
        parse_ms = timed(lambda: PARSERS["junit"]("", xml, root), args.repeats * 4)

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        make_suite(root, args.suite)
        sandbox = SubprocessSandbox()
        verifier = Verifier(root, sandbox, {"python": sys.executable, "env": ENV, "lint": [], "security": [], "typecheck": []})
        assert verifier.plan.test is not None
        flagged_command = verifier.plan.test.render(["tests"], "flagged.xml")
        plain: list[float] = []
        flagged: list[float] = []
        verified: list[float] = []
        for _ in range(args.repeats):
            plain += timed(lambda: sandbox.run(f"{sys.executable} -m pytest -q -p no:cacheprovider tests", root, ENV), 1)
            flagged += timed(lambda: sandbox.run(flagged_command, root, ENV), 1)
            verified += timed(lambda: verifier.run_tests("tests"), 1)

    related_ms: list[float] = []
    sympy = args.sympy_mirror
    if sympy is not None and sympy.exists():
        with tempfile.TemporaryDirectory() as tmp:
            checkout = Path(tmp)
            archive = subprocess.run(["git", "--git-dir", str(sympy), "archive", "HEAD", "sympy"], capture_output=True, check=True)
            subprocess.run(["tar", "-x", "-C", str(checkout)], input=archive.stdout, check=True)
            changed = ["sympy/core/basic.py"]
            picked = related_tests(checkout, changed, "pytest")
            related_ms = timed(lambda: related_tests(checkout, changed, "pytest"), args.repeats)
            print(f"sympy: {len(picked)} test files related to {changed[0]}")

    p50, p95 = stats(parse_ms)
    print(f"parse JUnit ({args.tests} cases): median {p50:.1f} ms, p95 {p95:.1f} ms")
    plain50, plain95 = stats(plain)
    flag50, flag95 = stats(flagged)
    ver50, ver95 = stats(verified)
    print(f"suite of {args.suite} tests, {args.repeats} interleaved runs each")
    print(f"plain pytest: median {plain50:.0f} ms, p95 {plain95:.0f} ms")
    print(f"pytest with the verifier's flags (JUnit report): median {flag50:.0f} ms, p95 {flag95:.0f} ms")
    print(f"verifier run_tests: median {ver50:.0f} ms, p95 {ver95:.0f} ms ({(ver50 / plain50 - 1) * 100:+.1f}% over plain)")
    figures: dict[str, float | int] = {
        "junit_cases": args.tests, "suite_tests": args.suite,
        "junit_parse_median_ms": round(p50, 2), "junit_parse_p95_ms": round(p95, 2),
        "plain_pytest_median_ms": round(plain50), "plain_pytest_p95_ms": round(plain95),
        "flagged_pytest_median_ms": round(flag50), "flagged_pytest_p95_ms": round(flag95),
        "verifier_run_tests_median_ms": round(ver50), "verifier_run_tests_p95_ms": round(ver95),
        "verifier_overhead_pct": round((ver50 / plain50 - 1) * 100, 1),
    }
    if related_ms:
        r50, r95 = stats(related_ms)
        print(f"related tests on sympy: median {r50:.0f} ms, p95 {r95:.0f} ms")
        figures |= {"sympy_related_median_ms": round(r50), "sympy_related_p95_ms": round(r95)}
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
