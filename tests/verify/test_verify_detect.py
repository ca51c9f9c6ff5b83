"""Detection on small projects: files, AGENTS.md and config each name the commands."""

from __future__ import annotations

from pathlib import Path

import pytest

from codeloop.errors import ConfigError
from codeloop.verify.agents_md import parse_agents_md
from codeloop.verify.commands import pytest_spec, split_targets
from codeloop.verify.detect import detect, sandbox_which
from codeloop.verify.settings import VerifySettings


def nothing(_name: str) -> str | None:
    return None


def everything(name: str) -> str | None:
    return f"/usr/bin/{name}"


def names(plan) -> tuple[str | None, list[str]]:
    return (plan.test.name if plan.test else None), [c.name for c in plan.checks]


@pytest.mark.parametrize(
    ("files", "runner"),
    [
        ({"pyproject.toml": "[tool.pytest.ini_options]\naddopts = '-q'\n"}, "pytest"),
        ({"setup.cfg": "[tool:pytest]\n", "pkg/a.py": ""}, "pytest"),
        ({"requirements-dev.txt": "pytest>=7\n", "setup.py": ""}, "pytest"),
        ({"go.mod": "module x\n"}, "go test"),
        ({"Cargo.toml": "[package]\nname='x'\n"}, "cargo test"),
        ({"package.json": '{"scripts": {"test": "jest"}}'}, "npm test"),
        ({"package.json": '{"scripts": {"test": "vitest"}}', "yarn.lock": ""}, "yarn test"),
        ({"package.json": '{"scripts": {"test": "vitest"}}', "pnpm-lock.yaml": ""}, "pnpm test"),
        ({"Makefile": "all:\n\techo\n\ntest:\n\t./run-tests\n"}, "make test"),
        ({"tox.ini": "[tox]\nenvlist = py311\n"}, "tox"),
        ({"setup.py": "", "bin/test": "", "sympy/utilities/runtests.py": ""}, "sympy bin/test"),
    ],
)
def test_detects_the_test_runner(tmp_path: Path, write_tree, files: dict[str, str], runner: str) -> None:
    plan = detect(write_tree(tmp_path, files), which=nothing)
    assert plan.test is not None and plan.test.name == runner


def test_npm_default_test_script_is_not_a_test_command(tmp_path: Path, write_tree) -> None:
    root = write_tree(tmp_path, {"package.json": '{"scripts": {"test": "echo \\"Error: no test specified\\" && exit 1"}}'})
    assert detect(root, which=nothing).test is None


def test_unittest_projects_use_pytest_when_available_else_unittest(tmp_path: Path, write_tree) -> None:
    root = write_tree(tmp_path, {"setup.py": "", "tests/test_a.py": "import unittest\n"})
    assert detect(root, which=everything).test.name == "pytest"  # type: ignore[union-attr]
    assert detect(root, which=nothing).test.command == "python3 -m unittest discover -v"  # type: ignore[union-attr]


def test_pytest_command_asks_for_junit_and_no_cache(tmp_path: Path, write_tree) -> None:
    plan = detect(write_tree(tmp_path, {"pytest.ini": "[pytest]\n"}), which=nothing)
    command = plan.test.render(["tests/test_a.py"], ".codeloop-verify/r.xml")  # type: ignore[union-attr]
    assert "--junitxml=.codeloop-verify/r.xml" in command
    assert "-p no:cacheprovider" in command and "junit_family=xunit1" in command
    assert command.endswith("tests/test_a.py")


def test_python_checks_follow_configuration_and_installed_tools(tmp_path: Path, write_tree) -> None:
    configured = write_tree(tmp_path / "a", {"pyproject.toml": "[tool.ruff]\nline-length = 100\n"})
    assert names(detect(configured, which=everything))[1] == ["ruff", "bandit"]
    flake8 = write_tree(tmp_path / "b", {"setup.cfg": "[flake8]\nmax-line-length = 100\n"})
    assert names(detect(flake8, which=everything))[1] == ["flake8", "bandit"]
    bare = write_tree(tmp_path / "c", {"setup.py": ""})
    assert names(detect(bare, which=everything))[1] == ["ruff-errors", "bandit"]
    plan = detect(bare, which=nothing)
    assert plan.checks == [] and any("bandit" in n for n in plan.notes)


def test_js_checks_use_the_project_binaries(tmp_path: Path, write_tree) -> None:
    root = write_tree(tmp_path, {
        "package.json": "{}", "eslint.config.mjs": "export default [];", "tsconfig.json": "{}",
        "node_modules/.bin/eslint": "", "node_modules/.bin/tsc": "",
    })
    plan = detect(root, which=nothing)
    assert [(c.name, c.category, c.parser) for c in plan.checks] == [
        ("eslint", "lint", "eslint"), ("tsc", "typecheck", "tsc"),
    ]
    assert plan.checks[0].command.startswith("./node_modules/.bin/eslint -f json")


def test_semgrep_only_with_a_local_rule_file(tmp_path: Path, write_tree) -> None:
    root = write_tree(tmp_path, {"setup.py": ""})
    assert "semgrep" not in names(detect(root, which=everything))[1]
    write_tree(root, {".semgrep.yml": "rules: []\n"})
    assert "semgrep" in names(detect(root, which=everything))[1]


AGENTS = """# Working on this project

Run everything with the venv active.

- Test: `python -m pytest -x tests`
- Lint: ruff check src

```bash
test: this line is in a bash block and is ignored
```

```verify
typecheck: mypy src
security: bandit -r src
lint: flake8 src
```
"""


def test_agents_md_lines_and_verify_block() -> None:
    named = parse_agents_md(AGENTS)
    assert named.test == "python -m pytest -x tests"
    assert named.lint == ["ruff check src", "flake8 src"]
    assert named.typecheck == ["mypy src"]
    assert named.security == ["bandit -r src"]


def test_agents_md_overrides_detection_and_gets_machine_readable_flags(tmp_path: Path, write_tree) -> None:
    root = write_tree(tmp_path, {"AGENTS.md": AGENTS, "go.mod": "module x\n"})
    plan = detect(root, which=everything)
    assert plan.test is not None and plan.test.name == "pytest" and plan.test.source == "AGENTS.md"
    assert "--junitxml" in plan.test.command and plan.test.command.endswith("-x tests")
    by_name = {c.name: c for c in plan.checks}
    assert by_name["ruff"].command == "ruff check src --no-fix --no-cache --output-format json"
    assert by_name["bandit"].command == "bandit -r src -f json -q"
    assert by_name["mypy"].parser == "generic"


def test_config_wins_and_an_empty_list_turns_a_category_off(tmp_path: Path, write_tree) -> None:
    root = write_tree(tmp_path, {"AGENTS.md": AGENTS, "pyproject.toml": "[tool.ruff]\n"})
    settings = VerifySettings.load({"test": "./run-tests.sh -x {targets}", "lint": [], "security": []})
    plan = detect(root, settings, which=everything)
    assert plan.test is not None and plan.test.source == "config"
    assert plan.test.render(["tests/a b.py"], "r") == "./run-tests.sh -x 'tests/a b.py'"
    assert plan.test.render(None, "r") == "./run-tests.sh -x"
    assert [c.category for c in plan.checks] == ["typecheck"]


def test_bad_settings_name_the_problem() -> None:
    with pytest.raises(ConfigError) as info:
        VerifySettings.load({"tset": "pytest"})
    assert "tset" in str(info.value) and "allowed keys" in str(info.value)
    with pytest.raises(ConfigError):
        VerifySettings.load({"max_fix_rounds": 0})


def test_tool_probe_looks_inside_the_sandbox(tmp_path: Path, sandbox, base_settings) -> None:
    which = sandbox_which(sandbox, tmp_path, base_settings["env"])
    python_bin = str(Path(base_settings["python"]).parent)
    assert which("pytest") == f"{python_bin}/pytest"
    assert which("no-such-tool") is None


def test_sympy_runner_named_in_config_gets_verbose_and_targets(tmp_path: Path) -> None:
    plan = detect(tmp_path, VerifySettings.load({"test": "bin/test -C"}), which=nothing)
    assert plan.test is not None and plan.test.parser == "sympy"
    assert plan.test.render(["sympy/core/tests/test_basic.py"], "r") == (
        "bin/test -C --verbose --seed 0 sympy/core/tests/test_basic.py")


def test_targets_split_on_spaces_outside_parameter_brackets() -> None:
    assert split_targets(" tests/a.py::t[x y]  tests/b.py::c\ttests/d.py ") == [
        "tests/a.py::t[x y]", "tests/b.py::c", "tests/d.py",
    ]
    spec = pytest_spec("python3")
    assert spec.render(split_targets("tests/a.py::t[x y]"), "r").endswith("'tests/a.py::t[x y]'")


def test_sympy_runner_is_detected_with_its_cache_and_one_seed(tmp_path: Path, write_tree) -> None:
    root = write_tree(tmp_path, {"setup.py": "", "bin/test": "", "sympy/utilities/runtests.py": ""})
    plan = detect(root, VerifySettings.load({"python": "python3"}), which=nothing)
    assert plan.test is not None
    assert plan.test.render(["sympy/core/tests/test_basic.py"], "r") == (
        "python3 bin/test --verbose --seed 0 sympy/core/tests/test_basic.py")
