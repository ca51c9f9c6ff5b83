"""The tools a session offers unless told otherwise."""

from __future__ import annotations

from codeloop.tools.base import Tool
from codeloop.tools.files import ListFilesTool, ReadFileTool
from codeloop.tools.finish import FinishTool
from codeloop.tools.grep import GrepTool
from codeloop.tools.registry import ToolRegistry
from codeloop.tools.run import RunTool


def default_tools() -> list[Tool]:
    from codeloop.tools.edit_tools import ApplyPatch, EditFile, WriteFile

    return [ReadFileTool(), ListFilesTool(), GrepTool(), EditFile(), WriteFile(), ApplyPatch(),
            RunTool(), FinishTool()]


def default_registry() -> ToolRegistry:
    return ToolRegistry(default_tools())
