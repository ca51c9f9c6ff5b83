"""The set of tools a session offers, and validation of the model's calls against them."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from pydantic import ValidationError

from codeloop.events import ToolCallData
from codeloop.llm.textmode import FORMAT_ERROR_TOOL
from codeloop.llm.types import ToolSpec
from codeloop.tools.base import Observation, Tool, ToolArgs


@dataclass(frozen=True)
class Validated:
    tool: Tool
    args: ToolArgs


class ToolRegistry:
    def __init__(self, tools: Iterable[Tool]) -> None:
        self._tools: dict[str, Tool] = {}
        for tool in tools:
            self._tools[tool.name] = tool

    def add(self, tool: Tool) -> None:
        self._tools[tool.name] = tool

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    @property
    def names(self) -> list[str]:
        return list(self._tools)

    def specs(self) -> list[ToolSpec]:
        return [ToolSpec(name=t.name, description=t.description, parameters=t.schema())
                for t in self._tools.values()]

    def validate(self, call: ToolCallData) -> Validated | Observation:
        """The tool and parsed arguments, or an error observation the model can act on."""
        if call.name == FORMAT_ERROR_TOOL:
            # A text-mode reply that could not be parsed: the precise reason is the "arguments".
            return Observation(ok=False, data={"malformed": True}, error=call.raw_arguments)
        tool = self._tools.get(call.name)
        if tool is None:
            return Observation(
                ok=False, data={"malformed": True},
                error=f"unknown tool {call.name!r}; available tools: {', '.join(self._tools)}",
            )
        if call.arguments is None:
            return Observation(
                ok=False, data={"malformed": True},
                error=(f"the arguments of {call.name} are not a valid JSON object: "
                       f"{call.raw_arguments[:300]!r}; send the arguments as one JSON object"),
            )
        problem = tool.check_arguments(call.arguments)
        if problem is not None:
            return Observation(ok=False, data={"malformed": True},
                               error=f"invalid arguments for {call.name}: {problem}")
        try:
            args = tool.args_model.model_validate(call.arguments)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}"
                for e in exc.errors()
            )
            return Observation(ok=False, data={"malformed": True},
                               error=f"invalid arguments for {call.name}: {problems}")
        return Validated(tool=tool, args=args)
