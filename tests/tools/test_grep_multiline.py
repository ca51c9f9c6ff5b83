"""grep with a pattern spanning lines: searched as the literal block it is, with ripgrep and
with the Python fallback."""

from __future__ import annotations

from pathlib import Path

import pytest

from codeloop.sandbox.subprocess_backend import SubprocessSandbox
from codeloop.tools.base import ToolContext
from codeloop.tools.grep import GrepArgs, GrepTool
from codeloop.workspace.factory import open_workspace

BLOCK = "def total(self):\n    return sum(x[0] for x in self.items)"


@pytest.fixture(params=[True, False], ids=["ripgrep", "python"])
def ctx(request: pytest.FixtureRequest, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> ToolContext:
    if not request.param:
        monkeypatch.setattr("codeloop.tools.grep.find_ripgrep", lambda: None)
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "cart.py").write_text(f"class Cart:\n    {BLOCK.replace(chr(10), chr(10) + '    ')}\n")
    # The first line alone appears here too, followed by something else.
    (repo / "other.py").write_text("def total(self):\n    return 0\n")
    ws = open_workspace(repo, tmp_path / "state", prefer="copy")
    return ToolContext(workspace=ws, sandbox=SubprocessSandbox())


def test_a_multi_line_literal_is_searched_as_such(ctx: ToolContext) -> None:
    pattern = "def total(self):\n        return sum(x[0] for x in self.items)"
    out = GrepTool().run(GrepArgs(pattern=pattern), ctx)
    assert out.ok, out.error
    assert out.output.splitlines() == [
        "cart.py:2:    def total(self):",
        "cart.py:3:        return sum(x[0] for x in self.items)"]
    assert out.data["multiline"] == "literal"


def test_a_multi_line_regex_is_tried_when_the_literal_finds_nothing(ctx: ToolContext) -> None:
    out = GrepTool().run(GrepArgs(pattern=r"def total\(self\):\n\s+return 0"), ctx)
    assert out.ok and out.data["multiline"] == "regex"
    assert out.output.splitlines() == ["other.py:1:def total(self):", "other.py:2:    return 0"]
    # A real newline in a regex: the literal finds nothing, the regex is tried next.
    out = GrepTool().run(GrepArgs(pattern="def total\\(self\\):\n +return 0"), ctx)
    assert out.ok and out.data["multiline"] == "regex" and out.output.startswith("other.py:1:")
    none = GrepTool().run(GrepArgs(pattern="def total(self):\n    return 1"), ctx)
    assert none.ok and none.output.startswith("no matches (the multi-line pattern")
