"""A verification command: how to run it whole or on targets, and how to read its output."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

from codeloop.verify.models import Category
from codeloop.verify.settings import TEST_SEED

# Where commands write their reports, relative to the workspace; removed after each run.
SCRATCH_DIR = ".codeloop-verify"


@dataclass(frozen=True)
class CommandSpec:
    """`command` runs the whole scope; `target_command` (with `{targets}`) runs chosen tests."""

    name: str
    category: Category
    command: str
    parser: str = "generic"
    target_command: str | None = None
    # File extension of the report the command writes to `{report}`, if it writes one.
    report_ext: str | None = None
    source: str = "detected"
    # Exit codes meaning "could not run as asked" (bad target, nothing collected), when the
    # output also holds one of `usage_markers` (pytest exits 4 for a broken conftest too).
    usage_exit_codes: frozenset[int] = field(default_factory=frozenset)
    usage_markers: tuple[str, ...] = ()

    def render(self, targets: list[str] | None, report: str) -> str:
        if targets and self.target_command:
            text = self.target_command.replace("{targets}", " ".join(shlex.quote(t) for t in targets))
        else:
            text = self.command
        return text.replace("{report}", shlex.quote(report))

    @property
    def slug(self) -> str:
        """The name as a file-name part."""
        return re.sub(r"[^\w-]+", "-", self.name)

    def display(self, targets: list[str] | None = None) -> str:
        """The command as people should read it (the report file under a stable name)."""
        return self.render(targets, f"{SCRATCH_DIR}/{self.slug}.{self.report_ext or 'out'}")


def split_targets(text: str) -> list[str]:
    """Whitespace-separated targets; spaces inside `[...]` (pytest parameter ids) do not split."""
    out: list[str] = []
    current: list[str] = []
    depth = 0
    for char in text.strip():
        if char == "[":
            depth += 1
        elif char == "]":
            depth = max(0, depth - 1)
        if char.isspace() and depth == 0:
            if current:
                out.append("".join(current))
                current = []
            continue
        current.append(char)
    if current:
        out.append("".join(current))
    return out


_SIMPLE = re.compile(r"^[^;&|<>`$()]+$")


def _words(command: str) -> list[str]:
    try:
        return shlex.split(command)
    except ValueError:
        return []


def pytest_spec(python: str, extra: str = "", source: str = "detected") -> CommandSpec:
    base = (
        f"PYTHONDONTWRITEBYTECODE=1 {python} -m pytest -p no:cacheprovider -o junit_family=xunit1 "
        f"--junitxml={{report}} --continue-on-collection-errors -q{(' ' + extra) if extra else ''}"
    )
    return CommandSpec(
        name="pytest", category="test", command=base, parser="junit",
        target_command=base + " {targets}", report_ext="xml", source=source,
        usage_exit_codes=frozenset({4, 5}),
        usage_markers=("no tests ran", "file or directory not found", "ERROR: not found"),
    )


def sympy_seeded(command: str) -> str:
    """sympy's runner seeds `random` afresh each run and its assumptions shuffle with it, so a
    test can pass in one run and hang or fail in the next: one seed for every run, unless
    `command` names its own."""
    return command if "--seed" in command else f"{command} --seed {TEST_SEED}"


def sympy_spec(command: str, source: str = "detected") -> CommandSpec:
    """sympy's own runner; `command` must print one line per test (`--verbose`)."""
    command = sympy_seeded(command)
    base = command.replace("{targets}", "").strip()
    return CommandSpec(name="sympy bin/test", category="test", command=base, parser="sympy",
                       target_command=command if "{targets}" in command else f"{command} {{targets}}", source=source)


def spec_from_command(command: str, category: Category, source: str) -> CommandSpec:
    """A spec for a command a person named; known tools get machine-readable output flags.

    A command may hold `{targets}` where chosen tests go; without it, only pytest takes targets.
    """
    words = _words(command)
    simple = bool(_SIMPLE.match(command)) and bool(words)
    program = words[0].rsplit("/", 1)[-1] if words else ""
    if simple and (program == "pytest" or words[1:3] == ["-m", "pytest"]):
        python = words[0] if program != "pytest" else "python"
        rest = words[1:] if program == "pytest" else words[3:]
        return pytest_spec(python, shlex.join(rest), source)
    if simple and program == "go" and words[1:2] == ["test"]:
        json_cmd = command if "-json" in words else command.replace("go test", "go test -json", 1)
        return CommandSpec(name="go test", category=category, command=json_cmd, parser="go-json", source=source)
    if simple and program == "cargo" and words[1:2] == ["test"]:
        return CommandSpec(name="cargo test", category=category, command=command, parser="cargo", source=source)
    if simple and program == "ruff" and "check" in words and "--output-format" not in command:
        # A project may set `fix = true`; verification must not change files.
        safe = [flag for flag in ("--no-fix", "--no-cache") if flag not in words and "--fix" not in words]
        return CommandSpec(name="ruff", category=category, parser="ruff", source=source,
                           command=" ".join([command, *safe, "--output-format json"]))
    if simple and program == "eslint" and "-f" not in words and "--format" not in command:
        return CommandSpec(name="eslint", category=category, parser="eslint", source=source,
                           command=f"{command} -f json")
    if simple and program == "tsc" and "--pretty" not in command:
        return CommandSpec(name="tsc", category=category, parser="tsc", source=source,
                           command=f"{command} --pretty false")
    if simple and program == "bandit" and "-f" not in words:
        return CommandSpec(name="bandit", category=category, parser="bandit", source=source,
                           command=f"{command} -f json -q")
    if simple and any(w.endswith("bin/test") for w in words[:2]):
        return sympy_spec(command if "--verbose" in words else f"{command} --verbose", source)
    if simple and program == "flake8":
        return CommandSpec(name="flake8", category=category, parser="flake8", source=source, command=command)
    if "{targets}" in command:
        return CommandSpec(name=program or command, category=category, source=source,
                           command=command.replace("{targets}", "").strip(), target_command=command)
    return CommandSpec(name=program or command, category=category, command=command, source=source)
