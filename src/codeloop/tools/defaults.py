"""The tools a session offers unless told otherwise."""

from __future__ import annotations

from codeloop.tools.base import Tool
from codeloop.tools.edit_tools import ApplyPatch, EditFile, WriteFile
from codeloop.tools.files import ListFilesTool, ReadFileTool
from codeloop.tools.finish import FinishTool
from codeloop.tools.grep import GrepTool
from codeloop.tools.network_tools import RequestNetwork
from codeloop.tools.plan_tools import ProposePlan, UpdatePlan
from codeloop.tools.registry import ToolRegistry
from codeloop.tools.run import RunTool
from codeloop.tools.search_tools import SEARCH_TOOLS
from codeloop.tools.verify_tools import RunChecks, RunTests


def default_tools(network: bool = False) -> list[Tool]:
    """The built-in tools; `network`: the session's config turns its network on, so the
    model may ask for another host."""
    return [ReadFileTool(), ListFilesTool(), GrepTool(), *(t() for t in SEARCH_TOOLS),
            EditFile(), WriteFile(), ApplyPatch(), RunTool(), RunTests(), RunChecks(),
            *([RequestNetwork()] if network else []),
            ProposePlan(), UpdatePlan(), FinishTool()]


def default_registry(network: bool = False) -> ToolRegistry:
    return ToolRegistry(default_tools(network))
