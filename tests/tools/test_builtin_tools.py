"""read_file, list_files and grep (ripgrep and the Python fallback) on a real workspace."""

from __future__ import annotations

from pathlib import Path

import pytest

from codeloop.sandbox.subprocess_backend import SubprocessSandbox
from codeloop.tools.base import ToolContext
from codeloop.tools.files import ListFilesArgs, ListFilesTool, ReadFileArgs, ReadFileTool
from codeloop.tools.grep import GrepArgs, GrepTool
from codeloop.workspace.factory import open_workspace


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    repo = tmp_path / "repo"
    (repo / "src" / "deep" / "er").mkdir(parents=True)
    (repo / "src" / "app.py").write_text("".join(f"line {n}\n" for n in range(1, 3001)))
    (repo / "src" / "deep" / "er" / "x.py").write_text("def needle():\n    return 1\n")
    (repo / "blob.bin").write_bytes(b"\x00\x01needle")
    ws = open_workspace(repo, tmp_path / "state", prefer="copy")
    return ToolContext(workspace=ws, sandbox=SubprocessSandbox())


def test_read_file_pages_large_files(ctx: ToolContext) -> None:
    first = ReadFileTool().run(ReadFileArgs(path="src/app.py"), ctx)
    assert first.ok and first.truncated and "start_line=2001" in first.output
    assert first.output.splitlines()[0].split("\t") == ["   1", "line 1"]
    part = ReadFileTool().run(ReadFileArgs(path="src/app.py", start_line=2999, end_line=3005), ctx)
    assert part.output.splitlines() == ["2999\tline 2999", "3000\tline 3000"]


def test_read_file_refuses_binary_and_directories(ctx: ToolContext) -> None:
    assert "binary" in (ReadFileTool().run(ReadFileArgs(path="blob.bin"), ctx).error or "")
    assert "directory" in (ReadFileTool().run(ReadFileArgs(path="src"), ctx).error or "")
    assert "not found" in (ReadFileTool().run(ReadFileArgs(path="nope.py"), ctx).error or "")


def test_list_files_depth(ctx: ToolContext) -> None:
    shallow = ListFilesTool().run(ListFilesArgs(path=".", depth=1), ctx).output.splitlines()
    assert "src/" in shallow and "blob.bin" in shallow
    deep = ListFilesTool().run(ListFilesArgs(path=".", depth=5), ctx).output
    assert "src/deep/er/x.py" in deep


@pytest.mark.parametrize("use_rg", [True, False])
def test_grep_with_and_without_ripgrep(ctx: ToolContext, use_rg: bool,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    if not use_rg:
        # Selects the fallback path, as on a machine without the rg binary.
        monkeypatch.setattr("codeloop.tools.grep.find_ripgrep", lambda: None)
    out = GrepTool().run(GrepArgs(pattern=r"def needle\("), ctx)
    assert out.ok and out.output == "src/deep/er/x.py:1:def needle():"
    globbed = GrepTool().run(GrepArgs(pattern="line 29", glob="*.txt"), ctx)
    assert globbed.output == "no matches"
    many = GrepTool().run(GrepArgs(pattern="line", path="src"), ctx)
    assert many.truncated and "narrow" in many.output
    bad = GrepTool().run(GrepArgs(pattern="(unclosed"), ctx)
    assert not bad.ok and bad.error
    outside = GrepTool().run(GrepArgs(pattern="x", path="../"), ctx)
    assert not outside.ok and "outside" in (outside.error or "")
