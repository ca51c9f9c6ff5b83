"""The finish tool: the model says the task is done."""

from __future__ import annotations

from pydantic import Field

from codeloop.tools.base import Observation, Tool, ToolArgs, ToolContext


class FinishArgs(ToolArgs):
    summary: str = Field(description="What was changed and how it was verified.")


class FinishTool(Tool):
    name = "finish"
    description = (
        "Call when the task is complete: give a short summary of the change and how you "
        "verified it. Do not call other tools in the same turn."
    )
    args_model = FinishArgs
    tier = "read"

    def run(self, args: FinishArgs, ctx: ToolContext) -> Observation:
        return Observation(ok=True, output="finished", ends_session=True,
                           data={"summary": args.summary})
