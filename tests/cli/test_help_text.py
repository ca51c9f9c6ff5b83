"""`--help` of every command: the repository is `--repo/-C` wherever one is taken, older
spellings are not shown, help strings are sentences, and no type labels (`<bool>`) appear."""

from __future__ import annotations

import re
from collections import defaultdict
from functools import cache
from typing import Any

import pytest
import typer
from typer.core import TyperArgument, TyperGroup
from typer.testing import CliRunner

from codeloop.cli import app

# Every command that works on a repository on disk.
REPO_COMMANDS = {"run", "replay", "index", "search", "verify", "trust", "policy check", "patch",
                 "doctor", "memory list", "memory add", "memory export"}
# Spellings that now mean nothing but an older way of naming something else.
OLD_SPELLINGS = ("--path", "-p,", "--repo-filter")
TYPE_LABEL = re.compile(r"<[a-z][a-z \[\]]*>")


# Built once: making the click commands from the app costs ~50 ms, and the README's checks
# ask for them once per command line they parse (hundreds of times while collecting).
@cache
def commands() -> dict[str, Any]:
    """Every runnable command by its path below `codeloop`, e.g. "policy check"."""
    found: dict[str, Any] = {}

    def walk(cmd: Any, path: str) -> None:
        if isinstance(cmd, TyperGroup):
            for name, sub in cmd.commands.items():
                walk(sub, f"{path} {name}".strip())
        else:
            found[path] = cmd

    walk(typer.main.get_command(app), "")
    return found


def _help(path: str) -> str:
    result = CliRunner().invoke(app, [*path.split(), "--help"], env={"COLUMNS": "200"},
                                terminal_width=200)
    assert result.exit_code == 0, result.output
    return result.output


def _shown(cmd: Any) -> list[Any]:
    return [p for p in cmd.params if not getattr(p, "hidden", False)]


def _is_sentence(text: str) -> bool:
    text = " ".join(text.split())
    return bool(text) and (text[0].isupper() or not text[0].isalpha()) and text.endswith(".")


def test_every_command_is_found() -> None:
    assert {"run", "resume", "serve", "doctor", "eval swebench", "policy check"} <= set(commands())


@pytest.mark.parametrize("path", sorted(commands()))
def test_help_names_the_repository_one_way_and_shows_no_types(path: str) -> None:
    out = _help(path)
    assert not TYPE_LABEL.search(out), TYPE_LABEL.search(out)
    for old in OLD_SPELLINGS:
        assert old not in out
    cmd = commands()[path]
    for hidden in (p for p in cmd.params if getattr(p, "hidden", False)):
        assert hidden.name not in out, f"hidden {hidden.name} shown"
    repo = [p for p in _shown(cmd) if "--repo" in getattr(p, "opts", [])]
    if path in REPO_COMMANDS:
        assert repo and set(repo[0].opts) == {"--repo", "-C"}
        assert repo[0].metavar == "PATH" and "--repo" in out and "-C" in out and "PATH" in out
        assert not [p for p in _shown(cmd) if isinstance(p, TyperArgument)
                    and "repo" in (p.name or "")], "the repository as a shown argument"
    else:
        assert not repo, f"{path} takes --repo but is not in REPO_COMMANDS"


@pytest.mark.parametrize("path", sorted(commands()))
def test_help_strings_are_capitalised_sentences(path: str) -> None:
    cmd = commands()[path]
    first = (cmd.help or "").strip().split("\n\n")[0]
    assert _is_sentence(first), f"{path}: {first!r}"
    for param in _shown(cmd):
        text = getattr(param, "help", None) or ""
        assert _is_sentence(text), f"{path} {param.name}: {text!r}"


def test_groups_have_sentences_too() -> None:
    root = typer.main.get_command(app)
    assert isinstance(root, TyperGroup)
    for name, group in root.commands.items():
        if isinstance(group, TyperGroup):
            assert _is_sentence(group.help or ""), name


def test_each_option_is_spelled_one_way_across_commands() -> None:
    """A long option has the same short form (or none) everywhere it appears."""
    shorts: dict[str, set[tuple[str, ...]]] = defaultdict(set)
    for cmd in commands().values():
        for param in _shown(cmd):
            opts = getattr(param, "opts", [])
            for long in (o for o in opts if o.startswith("--")):
                shorts[long].add(tuple(sorted(o for o in opts if not o.startswith("--"))))
    mixed = {long: forms for long, forms in shorts.items() if len(forms) > 1}
    assert not mixed
    assert shorts["--repo"] == {("-C",)} and shorts["--out"] == {("-o",)}
