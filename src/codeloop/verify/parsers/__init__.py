"""Output parsers: one function per tool format, all `(output, report, root) -> ParsedOutput`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from codeloop.verify.models import ParsedOutput
from codeloop.verify.parsers.cargo_text import parse_cargo
from codeloop.verify.parsers.generic import parse_flake8, parse_generic
from codeloop.verify.parsers.go_json import parse_go_json
from codeloop.verify.parsers.json_tools import parse_bandit, parse_eslint, parse_ruff, parse_semgrep
from codeloop.verify.parsers.pytest_junit import parse_junit
from codeloop.verify.parsers.sympy_text import parse_sympy
from codeloop.verify.parsers.tsc_text import parse_tsc
from codeloop.verify.parsers.unittest_text import parse_unittest

Parser = Callable[[str, "str | None", Path], ParsedOutput]

PARSERS: dict[str, Parser] = {
    "junit": parse_junit,
    "go-json": parse_go_json,
    "cargo": parse_cargo,
    "sympy": parse_sympy,
    "tsc": parse_tsc,
    "unittest": parse_unittest,
    "eslint": parse_eslint,
    "ruff": parse_ruff,
    "bandit": parse_bandit,
    "semgrep": parse_semgrep,
    "flake8": parse_flake8,
    "generic": parse_generic,
}

__all__ = ["PARSERS", "Parser", "parse_generic"]
