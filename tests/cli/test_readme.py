"""The README: its first two lines keep their shape, its command table lists every command
the CLI has, its quick start is a first run on the user's own repository, and every
command line in it parses as the CLI would parse it."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from tests.cli.test_help_text import commands

README = Path(__file__).resolve().parents[2] / "README.md"
FENCE = re.compile(r"^```[a-z]*\n(.*?)^```", re.S | re.M)
INLINE = re.compile(r"`(codeloop [^`]+)`")


def _text() -> str:
    return README.read_text(encoding="utf-8")


def _command_lines() -> list[str]:
    """Every `codeloop ...` line of a code block, and every inline `codeloop ...` span that
    gives arguments (a bare `codeloop resume` in prose names a command; it must exist)."""
    text = _text()
    lines = [line.strip().removeprefix("$ ") for block in FENCE.findall(text)
             for line in block.splitlines()]
    found = [line for line in lines if line.startswith("codeloop ") or line == "codeloop"]
    spans = INLINE.findall(FENCE.sub("", text))
    assert all(_split(span) for span in spans)  # each names a command that exists
    return found + [span for span in spans if _split(span)[1]]


def _split(line: str) -> tuple[str, list[str]]:
    """The command path ("policy check") and the arguments after it."""
    words = shlex.split(line, comments=True)[1:]
    for size in (2, 1):
        path = " ".join(words[:size])
        if path in commands():
            return path, words[size:]
    raise AssertionError(f"no such command in {line!r}")


def test_the_first_two_lines_keep_their_shape() -> None:
    lines = _text().splitlines()
    assert lines[0] == "# codeloop"
    assert lines[2] == ("Set up and run the main job (an offline demo session): "
                        "`pip install -e '.[dev]' && codeloop demo`")
    assert lines[3] == "Run the tests: `python -m pytest -q -n 6 --dist loadgroup`"


def test_the_command_table_lists_every_command() -> None:
    rows = [line for line in _text().splitlines() if line.startswith("| `codeloop ")]
    listed = {_split(span)[0] for row in rows for span in INLINE.findall(row.split(" | ")[0])}
    assert listed == set(commands())


def test_the_quick_start_is_a_first_run_on_your_own_repository() -> None:
    start = _text().index("## Quick start")
    block = FENCE.search(_text(), start)
    assert block is not None
    steps = [line.split("#")[0].split() for line in block.group(1).splitlines()]
    assert any(s[:1] == ["export"] and "API_KEY" in s[1] for s in steps), "no model key set"
    run = next(s for s in steps if s[:2] == ["codeloop", "run"])
    assert run[run.index("--repo") + 1] == "." and "--model" in run
    order = [s[1] for s in steps if s[:1] == ["codeloop"]]
    assert order == ["run", "diff", "apply", "undo"]
    assert "--base-url" in _text()[start:] and "CODELOOP_MODEL" in _text()[start:]


@pytest.mark.parametrize("line", _command_lines())
def test_every_command_line_parses(line: str) -> None:
    path, args = _split(line)
    # Parsing checks the options exist, take what is given and no argument is missing.
    commands()[path].make_context(f"codeloop {path}", args)


def test_every_config_example_is_a_valid_config() -> None:
    import tomllib

    from codeloop.config import settings_from
    blocks = re.findall(r"^```toml\n(.*?)^```", _text(), re.S | re.M)
    assert len(blocks) >= 3
    for block in blocks:
        settings_from(tomllib.loads(block))  # raises ConfigError naming a bad key
