"""Work out how to test, lint and check a project from its files, config and AGENTS.md."""

from __future__ import annotations

import fnmatch
import json
import re
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from codeloop.sandbox.base import Limits, Sandbox
from codeloop.verify.agents_md import read_agents_md
from codeloop.verify.commands import (
    SCRATCH_DIR,
    CommandSpec,
    pytest_spec,
    spec_from_command,
    sympy_spec,
)
from codeloop.verify.settings import VerifySettings
from codeloop.workspace.errors import UnsafePath
from codeloop.workspace.hostfs import Entry, SafeRoot

Which = Callable[[str], str | None]

_PY_EXCLUDES = ",".join(
    f"./{d}" for d in (".git", ".hg", "node_modules", ".venv", "venv", ".tox", ".nox", "build", "dist", SCRATCH_DIR)
)
# A project may set `fix = true`: the verifier must never change files, nor leave a cache.
_RUFF = "ruff check --no-fix --no-cache"
_NPM_DEFAULT_TEST = 'echo "Error: no test specified" && exit 1'


@dataclass
class Plan:
    """The commands the verifier will run, and why some were left out."""

    test: CommandSpec | None = None
    checks: list[CommandSpec] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def describe(self) -> list[str]:
        lines = [f"test: {self.test.display()} ({self.test.source})" if self.test else "test: (none found)"]
        lines += [f"{c.category}: {c.display()} ({c.source})" for c in self.checks]
        return lines + [f"note: {n}" for n in self.notes]


# The repository is read through `SafeRoot`: a marker file or config that is a link is never
# followed (it still counts as present, as `node_modules/.bin` tools are links).
def _read(root: Path, rel: str) -> str:
    data = SafeRoot(root).read_if_file(rel)
    return "" if data is None else data.decode("utf-8", "replace")


def _exists(root: Path, rel: str) -> bool:
    return SafeRoot(root).exists(rel)


def _glob(root: Path, pattern: str) -> Iterator[str]:
    """Paths matching `pattern` ("*" within a name, "**" any depth of directories)."""
    tree = SafeRoot(root)

    def listing(rel: str) -> list[Entry]:
        try:
            return tree.scandir(rel)
        except (OSError, UnsafePath):
            return []

    def match(rel: str, parts: list[str]) -> Iterator[str]:
        head, rest = parts[0], parts[1:]
        if head == "**":
            yield from match(rel, rest)
            for entry in listing(rel):
                if entry.is_dir:
                    yield from match(entry.rel, parts)
            return
        for entry in listing(rel):
            if fnmatch.fnmatchcase(entry.name, head):
                if not rest:
                    yield entry.rel
                elif entry.is_dir:
                    yield from match(entry.rel, rest)

    return match("", pattern.split("/"))


def _has_section(root: Path, rel: str, header: str) -> bool:
    return bool(re.search(rf"^\s*\[{re.escape(header)}\]", _read(root, rel), re.MULTILINE))


def _is_python(root: Path) -> bool:
    markers = ("pyproject.toml", "setup.py", "setup.cfg", "tox.ini", "requirements.txt", "pytest.ini")
    return any(_exists(root, m) for m in markers) or any(_glob(root, "*.py"))


def _uses_pytest(root: Path) -> bool:
    if _exists(root, "pytest.ini") or _exists(root, "conftest.py") or _exists(root, "tests/conftest.py"):
        return True
    if _has_section(root, "pyproject.toml", "tool.pytest.ini_options") or _has_section(root, "setup.cfg", "tool:pytest"):
        return True
    if _has_section(root, "tox.ini", "pytest"):
        return True
    declared = ["pyproject.toml", "setup.py", "setup.cfg", "tox.ini", *_glob(root, "requirements*.txt")]
    return any("pytest" in _read(root, rel) for rel in declared)


def _has_python_tests(root: Path) -> bool:
    return any(_glob(root, "test*/**/test_*.py")) or any(_glob(root, "test_*.py")) or any(_glob(root, "*/tests/test_*.py"))


def _python_test(root: Path, settings: VerifySettings, which: Which, notes: list[str]) -> CommandSpec | None:
    # Old sympy runs its own runner; newer sympy configures pytest.
    sympy_runner = _exists(root, "bin/test") and _exists(root, "sympy/utilities/runtests.py")
    if sympy_runner and not _has_section(root, "pyproject.toml", "tool.pytest.ini_options"):
        # With sympy's cache on, as its developers run it: without it (`-C`) one of its test
        # files takes minutes instead of seconds (test_trigonometric: over 7 min against 3 s).
        return sympy_spec(f"{settings.python} bin/test --verbose")
    if _uses_pytest(root):
        return pytest_spec(settings.python)
    if _has_python_tests(root):
        if which("pytest"):
            notes.append("unittest-style tests run through pytest for its JUnit report")
            return pytest_spec(settings.python)
        return CommandSpec(name="unittest", category="test", parser="unittest",
                           command=f"{settings.python} -m unittest discover -v")
    if _exists(root, "tox.ini"):
        return CommandSpec(name="tox", category="test", command="tox")
    return None


def _package_manager(root: Path) -> str:
    if _exists(root, "pnpm-lock.yaml"):
        return "pnpm"
    if _exists(root, "yarn.lock"):
        return "yarn"
    return "npm"


def _js_test(root: Path) -> CommandSpec | None:
    try:
        package = json.loads(_read(root, "package.json") or "{}")
    except ValueError:
        return None
    script = (package.get("scripts") or {}).get("test") if isinstance(package, dict) else None
    if not script or script.strip() == _NPM_DEFAULT_TEST:
        return None
    manager = _package_manager(root)
    separator = " --" if manager == "npm" else ""
    return CommandSpec(name=f"{manager} test", category="test", command=f"{manager} test",
                       target_command=f"{manager} test{separator} {{targets}}")


def _make_test(root: Path) -> CommandSpec | None:
    if re.search(r"^test\s*:", _read(root, "Makefile"), re.MULTILINE):
        return CommandSpec(name="make test", category="test", command="make test")
    return None


def _detect_test(root: Path, settings: VerifySettings, which: Which, notes: list[str]) -> CommandSpec | None:
    if _exists(root, "go.mod"):
        # Reports go to a file: a big suite's stream would be cut by the output cap.
        return CommandSpec(name="go test", category="test", command="go test -json ./... > {report}",
                           parser="go-json", target_command="go test -json {targets} > {report}", report_ext="json")
    if _exists(root, "Cargo.toml"):
        return CommandSpec(name="cargo test", category="test", command="cargo test --no-fail-fast > {report} 2>&1",
                           parser="cargo", target_command="cargo test --no-fail-fast {targets} > {report} 2>&1",
                           report_ext="txt")
    js = _js_test(root) if _exists(root, "package.json") else None
    if js:
        return js
    if _is_python(root):
        found = _python_test(root, settings, which, notes)
        if found:
            return found
    return _make_test(root)


def _node_bin(root: Path, name: str, which: Which) -> str | None:
    if _exists(root, f"node_modules/.bin/{name}"):
        return f"./node_modules/.bin/{name}"
    return name if which(name) else None


def _ruff_configured(root: Path) -> bool:
    return _exists(root, "ruff.toml") or _exists(root, ".ruff.toml") or _has_section(root, "pyproject.toml", "tool.ruff")


def _flake8_configured(root: Path) -> bool:
    return _exists(root, ".flake8") or _has_section(root, "setup.cfg", "flake8") or _has_section(root, "tox.ini", "flake8")


def _python_checks(root: Path, which: Which, notes: list[str]) -> list[CommandSpec]:
    checks: list[CommandSpec] = []
    if _ruff_configured(root) and which("ruff"):
        checks.append(CommandSpec(name="ruff", category="lint", parser="ruff", report_ext="json",
                                  command=f"{_RUFF} --output-format json --output-file {{report}} ."))
    elif _flake8_configured(root) and which("flake8"):
        checks.append(CommandSpec(name="flake8", category="lint", parser="flake8", command="flake8 ."))
    elif which("ruff"):
        # No linter configured: check only for errors that break code (syntax, undefined names).
        checks.append(CommandSpec(name="ruff-errors", category="lint", parser="ruff", report_ext="json",
                                  command=f"{_RUFF} --isolated --select E9,F63,F7,F82 --output-format json --output-file {{report}} ."))
    if which("bandit"):
        checks.append(CommandSpec(name="bandit", category="security", parser="bandit", report_ext="json",
                                  command=f"bandit -r . -f json -o {{report}} -q -x {_PY_EXCLUDES}"))
    else:
        notes.append("bandit is not installed: no Python security scan")
    return checks


def _js_checks(root: Path, which: Which) -> list[CommandSpec]:
    checks: list[CommandSpec] = []
    eslint_config = any(_glob(root, "eslint.config.*")) or any(_glob(root, ".eslintrc*"))
    eslint = _node_bin(root, "eslint", which)
    if eslint_config and eslint:
        checks.append(CommandSpec(name="eslint", category="lint", parser="eslint", report_ext="json",
                                  command=f"{eslint} -f json -o {{report}} ."))
    tsc = _node_bin(root, "tsc", which)
    if _exists(root, "tsconfig.json") and tsc:
        checks.append(CommandSpec(name="tsc", category="typecheck", parser="tsc", command=f"{tsc} --noEmit --pretty false"))
    return checks


def _semgrep(root: Path, which: Which) -> list[CommandSpec]:
    # Only a project's own rules: `--config auto` and registry packs need the network.
    config = next((n for n in (".semgrep.yml", ".semgrep.yaml", ".semgrep") if _exists(root, n)), None)
    if config is None or not which("semgrep"):
        return []
    return [CommandSpec(name="semgrep", category="security", parser="semgrep", report_ext="json",
                        command=f"semgrep scan --config {config} --json --metrics off --quiet --output {{report}}")]


def _detect_checks(root: Path, which: Which, notes: list[str]) -> list[CommandSpec]:
    checks: list[CommandSpec] = []
    if _is_python(root):
        checks += _python_checks(root, which, notes)
    if _exists(root, "package.json") or _exists(root, "tsconfig.json"):
        checks += _js_checks(root, which)
    if _exists(root, "go.mod") and which("go"):
        checks.append(CommandSpec(name="go vet", category="lint", command="go vet ./..."))
    return checks + _semgrep(root, which)


# Every program detection asks about; probed in one sandbox command.
PROBED_TOOLS = ("pytest", "ruff", "flake8", "bandit", "semgrep", "go", "eslint", "tsc")


def sandbox_which(sandbox: Sandbox, root: Path, env: dict[str, str] | None = None) -> Which:
    """`which` as seen inside the sandbox, where commands will really run (its PATH differs)."""
    script = "; ".join(f'p=$(command -v {t}) && echo "{t}=$p"' for t in PROBED_TOOLS) + "; true"
    result = sandbox.run(script, root, env or None, Limits(timeout_s=30))
    found = dict(line.split("=", 1) for line in result.output.splitlines() if "=" in line)
    return found.get


def detect(root: Path, settings: VerifySettings | None = None, which: Which = shutil.which) -> Plan:
    """Settings win over AGENTS.md, which wins over what the files suggest, per category."""
    settings = settings or VerifySettings()
    named = read_agents_md(root)
    plan = Plan()
    if settings.test is not None:
        plan.test = spec_from_command(settings.test, "test", "config") if settings.test.strip() else None
    elif named.test:
        plan.test = spec_from_command(named.test, "test", "AGENTS.md")
    else:
        plan.test = _detect_test(root, settings, which, plan.notes)
    detected: list[CommandSpec] | None = None
    for category in ("lint", "typecheck", "security"):
        configured: list[str] | None = getattr(settings, category)
        from_agents: list[str] = getattr(named, category)
        if configured is not None:
            plan.checks += [spec_from_command(c, category, "config") for c in configured]
        elif from_agents:
            plan.checks += [spec_from_command(c, category, "AGENTS.md") for c in from_agents]
        else:
            if detected is None:
                detected = _detect_checks(root, which, plan.notes)
            plan.checks += [c for c in detected if c.category == category]
    return plan

