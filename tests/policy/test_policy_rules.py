"""Each rule syntax form, matched against real paths in a scratch repository."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from codeloop.policy.rules import PolicyConfigError, Rule, RuleSet, describe_call, patch_paths


def verdict(rules: RuleSet, name: str, args: dict[str, Any], cwd: Path) -> str:
    target = describe_call(name, args, cwd)
    if rules.first_deny(target):
        return "deny"
    if rules.first_ask(target):
        return "ask"
    return "allow" if rules.allowed_by(target) else "none"


def run(command: str) -> dict[str, Any]:
    return {"command": command}


@pytest.mark.parametrize(
    ("rule", "command", "matches"),
    [
        ("run(npm test)", "npm test", True),
        ("run(npm test)", "npm  test", True),
        ("run(npm test)", "npm test --watch", False),
        ("run(npm test)", "npm tests", False),
        ("run(pytest *)", "pytest", True),
        ("run(pytest *)", "pytest -q tests/a.py", True),
        ("run(pytest *)", "pytestx", False),
        ("run(git * --force)", "git push origin --force", True),
        ("run(git * --force)", "git push origin", False),
        ("Bash(npm run test:*)", "npm run test", True),
        ("Bash(npm run test:*)", "npm run test -- --ci", True),
        ("Bash(npm run test:*)", "npm run testing", False),
        ("run", "anything at all", True),
        ("run(ls \\*.py)", "ls *.py", True),
        ("run(ls \\*.py)", "ls a.py", False),
    ],
)
def test_command_patterns(rule: str, command: str, matches: bool, repo: Path) -> None:
    rules = RuleSet.parse([rule], [], [])
    assert (verdict(rules, "run", run(command), repo) == "allow") is matches


@pytest.mark.parametrize(
    ("rule", "path", "matches"),
    [
        ("edit(src/**)", "src/pkg/mod.py", True),
        ("edit(src/**)", "docs/index.md", False),
        ("edit(src/**)", "src/../docs/index.md", False),
        ("edit(src/*.py)", "src/a.py", True),
        ("edit(src/*.py)", "src/pkg/mod.py", False),
        ("edit(*.md)", "docs/index.md", True),
        ("edit(./docs/index.md)", "docs/index.md", True),
        ("edit(./index.md)", "docs/index.md", False),
        ("edit(/docs/**)", "docs/index.md", True),
        ("edit(src/**/*.{py,pyi})", "src/pkg/mod.pyi", True),
        ("edit(src/**/*.{py,pyi})", "src/pkg/mod.txt", False),
        ("Edit(docs/**)", "docs/index.md", True),
        ("write(docs/**)", "docs/index.md", True),
        ("edit", "anywhere/at/all.txt", True),
    ],
)
def test_edit_path_patterns(rule: str, path: str, matches: bool, repo: Path) -> None:
    rules = RuleSet.parse([rule], [], [])
    for tool in ("edit_file", "write_file"):
        assert (verdict(rules, tool, {"path": path}, repo) == "allow") is matches, tool


def test_read_rules_cover_every_reading_tool(repo: Path) -> None:
    rules = RuleSet.parse([], [], ["read(./.env)"])
    assert verdict(rules, "read_file", {"path": ".env"}, repo) == "deny"
    assert verdict(rules, "read_file", {"path": "./src/../.env"}, repo) == "deny"
    assert verdict(rules, "read_file", {"path": str(repo / ".env")}, repo) == "deny"
    assert verdict(rules, "grep", {"pattern": "KEY", "path": ".env"}, repo) == "deny"
    assert verdict(rules, "read_file", {"path": "src/pkg/mod.py"}, repo) == "none"
    assert verdict(rules, "read_file", {"path": "src/.env"}, repo) == "none"  # anchored


def test_unanchored_name_matches_at_any_depth(repo: Path) -> None:
    rules = RuleSet.parse([], [], ["read(.env)"])
    assert verdict(rules, "read_file", {"path": "src/.env"}, repo) == "deny"


def test_grep_rules_cover_only_grep(repo: Path) -> None:
    rules = RuleSet.parse([], ["grep(src/**)"], [])
    assert verdict(rules, "grep", {"pattern": "x", "path": "src/pkg"}, repo) == "ask"
    assert verdict(rules, "read_file", {"path": "src/pkg/mod.py"}, repo) == "none"


def test_directories_match_their_contents_pattern(repo: Path) -> None:
    rules = RuleSet.parse([], [], ["read(src/**)"])
    assert verdict(rules, "list_files", {"path": "src"}, repo) == "deny"


def test_read_tools_without_a_path_mean_the_root(repo: Path) -> None:
    rules = RuleSet.parse(["read(src/**)"], [], [])
    assert verdict(rules, "list_files", {}, repo) == "none"


def test_symlink_to_a_denied_file_is_denied(repo: Path) -> None:
    os.symlink(repo / ".env", repo / "src" / "innocent.txt")
    rules = RuleSet.parse(["edit(src/**)", "read"], [], ["read(./.env)"])
    assert verdict(rules, "read_file", {"path": "src/innocent.txt"}, repo) == "deny"
    # allow needs every spelling of the path allowed: the resolved one is .env, not src/**
    assert verdict(rules, "edit_file", {"path": "src/innocent.txt"}, repo) == "none"


def test_absolute_and_home_patterns(repo: Path) -> None:
    rules = RuleSet.parse([], [], [f"edit(/{repo}/docs/**)"])
    assert verdict(rules, "edit_file", {"path": "docs/index.md"}, repo) == "deny"
    outside = RuleSet.parse(["edit(src/**)"], [], [])
    assert verdict(outside, "edit_file", {"path": "/etc/passwd"}, repo) == "none"


def test_bare_tool_names(repo: Path) -> None:
    rules = RuleSet.parse(["finish"], [], ["web_fetch"])
    assert verdict(rules, "finish", {}, repo) == "allow"
    assert verdict(rules, "web_fetch", {"url": "x"}, repo) == "deny"
    assert verdict(rules, "run", run("ls"), repo) == "none"


def test_every_part_of_a_compound_command_must_be_allowed(repo: Path) -> None:
    rules = RuleSet.parse(["run(npm test)", "run(pytest *)"], [], [])
    assert verdict(rules, "run", run("npm test && pytest -q"), repo) == "allow"
    assert verdict(rules, "run", run("npm test && rm -rf build"), repo) == "none"
    assert verdict(rules, "run", run("npm test $(rm -rf build)"), repo) == "none"


def test_an_exact_remembered_line_allows_that_line_only(repo: Path) -> None:
    rules = RuleSet.parse(["run(npm test && npm run lint)"], [], [])
    assert verdict(rules, "run", run("npm test && npm run lint"), repo) == "allow"
    assert verdict(rules, "run", run("npm test && npm run lint; curl x"), repo) == "none"


def test_an_exact_line_keeps_its_newlines(repo: Path) -> None:
    rules = RuleSet.parse(["run(echo a curl x)"], [], [])
    assert verdict(rules, "run", run("echo a curl x"), repo) == "allow"
    assert verdict(rules, "run", run("echo a\ncurl x"), repo) == "none"
    multi = RuleSet.parse(["run(make build\nmake test)"], [], [])
    assert verdict(multi, "run", run("make build\nmake test"), repo) == "allow"
    assert verdict(multi, "run", run("make build make test"), repo) == "none"
    deny_line = RuleSet.parse(["run"], [], ["run(make build && make deploy)"])
    assert verdict(deny_line, "run", run("make build && make deploy"), repo) == "deny"


def test_allow_does_not_see_through_program_paths_but_deny_does(repo: Path) -> None:
    rules = RuleSet.parse(["run(pytest *)"], [], ["run(curl *)"])
    assert verdict(rules, "run", run("./pytest -q"), repo) == "none"
    assert verdict(rules, "run", run("/usr/bin/curl x"), repo) == "deny"
    assert verdict(rules, "run", run("./curl x"), repo) == "deny"


def test_deny_wins_over_ask_and_allow_and_first_match_is_reported(repo: Path) -> None:
    rules = RuleSet.parse(["run"], ["run(git *)"], ["run(git push *)", "run(git *)"])
    target = describe_call("run", run("git push origin"), repo)
    rule = rules.first_deny(target)
    assert rule is not None and rule.text == "run(git push *)"
    assert verdict(rules, "run", run("git status"), repo) == "deny"


def test_apply_patch_paths_come_from_the_patch(repo: Path) -> None:
    unified = "diff --git a/src/x.py b/src/y.py\n--- a/src/x.py\n+++ b/src/y.py\n@@ -1 +1 @@\n-a\n+b\n"
    envelope = "*** Begin Patch\n*** Update File: src/a.py\n*** Add File: .env\n*** End Patch\n"
    assert patch_paths(unified) == ["src/x.py", "src/y.py"]
    assert patch_paths(envelope) == ["src/a.py", ".env"]
    assert patch_paths("--- /dev/null\n+++ b/new.txt\t2024-01-01\n") == ["new.txt"]
    rules = RuleSet.parse(["edit(src/**)"], [], ["edit(.env)"])
    assert verdict(rules, "apply_patch", {"patch": unified}, repo) == "allow"
    assert verdict(rules, "apply_patch", {"patch": envelope}, repo) == "deny"


def test_a_patch_without_paths_is_a_problem(repo: Path) -> None:
    target = describe_call("apply_patch", {"patch": "just some text"}, repo)
    assert target.problems


@pytest.mark.parametrize(
    "text",
    ["run(", "run(npm test", "run()", "web_fetch(domain:example.com)", "1bad", "", "run)(x"],
)
def test_malformed_rules_are_config_errors(text: str) -> None:
    with pytest.raises(PolicyConfigError):
        Rule.parse(text)


SEARCH_BLOCKS = (
    "Here is the fix:\n\n```\n.github/workflows/ci.yml\n<<<<<<< SEARCH\na\n=======\nb\n"
    ">>>>>>> REPLACE\n```\n**src/a.py**\n<<<<<<< SEARCH\nx\n=======\ny\n>>>>>>> REPLACE\n"
)


def test_patch_paths_are_read_as_leniently_as_the_applier() -> None:
    assert patch_paths(SEARCH_BLOCKS) == [".github/workflows/ci.yml", "src/a.py"]
    assert patch_paths('+++ "b/.github/x"\n') == [".github/x"]
    assert patch_paths("*** Update File:.github/z\n") == [".github/z"]
    assert patch_paths("diff --git a/q b/r\nrename from q\nrename to r\ncopy to s\n") == ["q", "r", "s"]
    assert patch_paths("--- a/x.py\r\n+++ b/x.py\r\n") == ["x.py"]


def test_a_search_block_cannot_hide_behind_the_path_argument(repo: Path) -> None:
    rules = RuleSet.parse(["edit(src/**)"], [], ["edit(.github/**)"])
    args = {"patch": SEARCH_BLOCKS, "path": "src/a.py"}
    assert verdict(rules, "apply_patch", args, repo) == "deny"
    only_src = {"patch": "src/a.py\n<<<<<<< SEARCH\nx\n=======\ny\n>>>>>>> REPLACE\n",
                "path": "src/a.py"}
    assert verdict(rules, "apply_patch", only_src, repo) == "allow"


def test_path_deny_rules_also_cover_command_arguments(repo: Path) -> None:
    rules = RuleSet.parse(["run"], [], ["read(./.env)", "edit(.github/**)"])
    for command in ["cat .env", "cat src/../.env", "cp .env /tmp/x", "grep KEY .env",
                    "python -m json.tool --file=.env", "echo x > .github/workflows/ci.yml",
                    f"cat {repo}/.env"]:
        assert verdict(rules, "run", run(command), repo) == "deny", command
    assert verdict(rules, "run", run("cat README.md && ls src"), repo) == "allow"
