"""Running the model's tool calls: authorise, run (read-only ones together), record.

A part of `Runner` (session/runner.py): the loop decides when calls run, this decides how.
"""

from __future__ import annotations

import time
from contextlib import nullcontext
from typing import Literal

from codeloop.events import Event, ToolCallData, ToolCallFinished, ToolCallStarted
from codeloop.policy.engine import PolicyEngine
from codeloop.policy.redact import Redactor
from codeloop.session.authorise import Gatekeeper
from codeloop.session.control import Control
from codeloop.session.finish_gate import FinishGate, FinishStatus
from codeloop.session.observe import screen
from codeloop.session.parallel import concurrent_prefix, run_all
from codeloop.session.plan_exec import Conductor, tool_allowed
from codeloop.session.plan_gate import PlanGate
from codeloop.session.state import SessionState
from codeloop.tools.base import Observation, ToolContext
from codeloop.tools.plan_tools import ProposePlanArgs
from codeloop.tools.registry import ToolRegistry, Validated

MAX_OBSERVATION_CHARS = 30_000


def _truncate(text: str) -> tuple[str, bool]:
    if len(text) <= MAX_OBSERVATION_CHARS:
        return text, False
    half = MAX_OBSERVATION_CHARS // 2
    cut = len(text) - 2 * half
    return (f"{text[:half]}\n[... {cut} characters cut; narrow the command or read a range ...]\n"
            f"{text[-half:]}"), True


class ToolCalls:
    """The tool half of the runner; `Runner` sets these attributes and the two log methods."""

    session_id: str
    registry: ToolRegistry
    ctx: ToolContext
    state: SessionState
    policy: PolicyEngine | None
    gate: Gatekeeper | None
    plans: PlanGate
    finish_gate: FinishGate | None
    conductor: Conductor | None
    control: Control
    redactor: Redactor

    def _emit(self, *raw: Event) -> None:
        raise NotImplementedError

    def _finish(self, status: FinishStatus, summary: str = "", reason: str = "") -> None:
        raise NotImplementedError

    def _run_calls(self, calls: list[ToolCallData]) -> bool:
        """Run the pending calls in order (finish last); False if the loop must pause."""
        ordered = sorted(calls, key=lambda c: c.name == "finish")
        tools = {c.name: self.registry.get(c.name) for c in ordered}
        while ordered:
            if self.state.is_over:
                return True
            together = concurrent_prefix(ordered, tools)
            if together:
                if not self._run_together(ordered[:together]):
                    return False
                ordered = ordered[together:]
                continue
            if not self._run_call(ordered.pop(0)):
                return False
        return True

    def _run_together(self, calls: list[ToolCallData]) -> bool:
        """Read-only calls authorised one by one, then run at the same time."""
        jobs = []
        paused = False
        for call in calls:
            checked = self._authorised(call)
            if checked is None:  # a person must answer: the calls authorised so far still run
                paused = True
                break
            if checked is not True:
                jobs.append((call, checked))
        for call, _ in jobs:
            self._start(call)
        for (call, _), (observation, duration) in zip(jobs, run_all(jobs, self.ctx),
                                                       strict=True):
            self._record(call, observation, duration)
        return not paused

    def _authorised(self, call: ToolCallData) -> Validated | Literal[True] | None:
        """The validated call if it may run; True when it was answered already (invalid,
        refused); None when the loop must pause for a person."""
        checked = self.registry.validate(call)
        if isinstance(checked, Observation):
            self._record(call, checked, 0.0)
            return True
        role = self.state.requested_role
        if self.conductor is not None and not tool_allowed(role, checked.tool):
            self._record(call, Observation(ok=False, error=(
                f"{call.name} is not a tool of the {role or 'coder'} role")), 0.0,
                from_tool=False)
            return True
        verdict: Observation | Literal[True] | None = True
        if isinstance(checked.args, ProposePlanArgs):
            verdict = self.plans.authorise(call, checked.args, self.state)
        elif self.gate is not None:
            verdict = self.gate.authorise(call, checked, self.state, self.ctx.root,
                                          self.session_id)
        if verdict is None:
            return None
        if verdict is not True:
            self._record(call, verdict, 0.0, from_tool=False)
            return True
        return checked

    def _run_call(self, call: ToolCallData) -> bool:
        checked = self._authorised(call)
        if checked is None:
            return False
        if checked is True:
            return True
        if checked.tool.tier == "write" and self.finish_gate is not None and not self.state.edits:
            # Only on the untouched tree: after a resume the files may already be edited.
            self.finish_gate.before_edit()
        # A Ctrl-C waits for a write and its record; a command or a test run it cuts.
        with self.control.critical() if checked.tool.tier == "write" else nullcontext():
            self._execute(call, checked)
        return True

    def _execute(self, call: ToolCallData, checked: Validated) -> None:
        """Run an authorised call and record its result (a finish passes the finish gate)."""
        self._start(call)
        begin = time.perf_counter()
        try:
            observation = checked.tool.run(checked.args, self.ctx)
        except Exception as exc:  # a tool bug must not kill the session; the model sees it
            observation = Observation(ok=False, error=f"{call.name} failed: "
                                                      f"{type(exc).__name__}: {exc}")
        duration = (time.perf_counter() - begin) * 1000
        if observation.ends_session and observation.ok:
            if len(self.state.unfinished_calls()) > 1:
                observation = Observation(ok=False, error="finish must be the only pending call")
            elif self.finish_gate is not None:
                allow, message, escalate = self.finish_gate.check_finish()
                if not allow:
                    observation = Observation(ok=False, error=message)
                    self._record(call, observation, duration)
                    if escalate:
                        self._finish("needs_human", reason=message)
                    return
                summary = str(observation.data.get("summary", ""))
                observation.data["summary"] = f"{summary}\n\n{message}".strip()
            if self.conductor is not None and observation.ok:
                # With roles the step is checked and the reviewer looks first.
                observation = self.conductor.on_finish(
                    self.state, str(observation.data.get("summary", ""))) or observation
        self._record(call, observation, duration)
        if self.state.finish_summary is not None:
            self._finish("finished", summary=self.state.finish_summary)

    def _start(self, call: ToolCallData) -> None:
        """Recorded just before the tool runs: started-but-unfinished means interrupted."""
        if call.id not in self.state.started_calls:
            self._emit(ToolCallStarted(step=self.state.steps, call=call))

    def _record(self, call: ToolCallData, obs: Observation, duration_ms: float, *,
                from_tool: bool = True) -> None:
        """Append the call's result: the one place tool output and errors become model input."""
        self._start(call)
        seen = screen(call, obs, self.policy, self.redactor, self.ctx.root, self.session_id,
                      from_tool)
        text, cut = _truncate(seen.output)
        self._emit(ToolCallFinished(
            step=self.state.steps, call_id=call.id, name=call.name, ok=obs.ok, output=text,
            error=seen.error, truncated=obs.truncated or cut, untrusted=seen.untrusted,
            ends_session=obs.ends_session and obs.ok, duration_ms=duration_ms, data=seen.data,
        ))
