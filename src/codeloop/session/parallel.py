"""Independent read-only tool calls of one turn, run at the same time.

Only tools that read and touch nothing the session keeps run together (reads, searches,
explorers); the runner authorises each call first, in order, and records the results in the
order the model asked for them, so the log reads the same as a sequential run.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from codeloop.events import ToolCallData
from codeloop.tools.base import Observation, Tool, ToolContext
from codeloop.tools.registry import Validated

# Read-tier tools that change the session (plan, verdict, the end): never run alongside.
_SEQUENTIAL = {"finish", "update_plan", "propose_plan", "review"}
MAX_WORKERS = 8


def runs_concurrently(tool: Tool | None) -> bool:
    return tool is not None and tool.tier == "read" and tool.name not in _SEQUENTIAL


def concurrent_prefix(calls: Sequence[ToolCallData], lookup: dict[str, Tool | None]
                      ) -> int:
    """How many calls from the start may run together (0 or 1: run them one by one)."""
    n = 0
    while n < len(calls) and runs_concurrently(lookup.get(calls[n].name)):
        n += 1
    return n if n > 1 else 0


def run_all(jobs: Sequence[tuple[ToolCallData, Validated]], ctx: ToolContext
            ) -> list[tuple[Observation, float]]:
    """Each authorised call's observation and duration (ms), in the order given."""

    def one(job: tuple[ToolCallData, Validated]) -> tuple[Observation, float]:
        call, checked = job
        begin = time.perf_counter()
        try:
            observation = checked.tool.run(checked.args, ctx)
        except Exception as exc:  # a tool bug must not kill the session; the model sees it
            observation = Observation(ok=False, error=f"{call.name} failed: "
                                                      f"{type(exc).__name__}: {exc}")
        return observation, (time.perf_counter() - begin) * 1000

    if len(jobs) < 2:
        return [one(job) for job in jobs]
    with ThreadPoolExecutor(max_workers=min(len(jobs), MAX_WORKERS),
                            thread_name_prefix="codeloop-read") as pool:
        return list(pool.map(one, jobs))
