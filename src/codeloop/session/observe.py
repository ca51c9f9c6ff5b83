"""A tool call's result as the log and the model get it: repository text in its output and
its error scanned and fenced, secrets redacted from everything."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codeloop.events import (
    AuxiliaryModelCall,
    BaselineRecorded,
    Event,
    ExplorerFinished,
    ModelCallFailed,
    ModelFellBack,
    SessionFinished,
    StepChecked,
    SubagentToolCall,
    SystemNote,
    ToolCallData,
    VerificationRan,
)
from codeloop.policy.engine import PolicyEngine
from codeloop.policy.redact import Redacted, Redactor
from codeloop.policy.untrusted import wrap_untrusted
from codeloop.tools.base import Observation


@dataclass(frozen=True)
class Observed:
    """What may be recorded of an observation."""

    output: str
    error: str | None
    untrusted: bool
    data: dict[str, Any]


def screen(call: ToolCallData, obs: Observation, policy: PolicyEngine | None,
           redactor: Redactor, cwd: Path, session_id: str, from_tool: bool = True) -> Observed:
    """Output and error of what a tool did (`from_tool`) may quote the repository, so both
    are scanned and fenced; a refusal by the policy or the user is codeloop's own text.
    Redaction comes last, on the scrubbed text, so hidden characters cannot split a secret."""
    text, error, untrusted = obs.output, obs.error, obs.untrusted
    if policy is not None and from_tool and (text or error):
        post = policy.post_tool(call.name, call.arguments or {}, text, error=error, cwd=cwd,
                                session_id=session_id)
        text, error, untrusted = post.text, post.error, untrusted or post.untrusted
        if obs.source and not post.untrusted:  # fenced even when nothing was flagged
            text = wrap_untrusted(text, [], source=obs.source) if text else text
            error = wrap_untrusted(error, [], source=obs.source) if error else error
    found: Counter[str] = Counter()
    text = redactor.redact_data(text, found)
    error = redactor.redact_data(error, found)
    data = redactor.redact_data(obs.data, found)
    if found:  # the model is told, outside any fence: this note is codeloop's
        note = Redacted("", found).note()
        if text or not error:
            text = f"{text}\n\n{note}".lstrip()
        else:
            error = f"{error}\n\n{note}"
    return Observed(text, error, untrusted, data)


# Events that quote what commands printed (test failures, the verifier's summary, a refusal
# that ends the session) or what a provider answered in an error (which may echo the
# request, key included): like tool output, they hold no secret once in the log.
# With roles, a step's check quotes its command, the reviewer's brief the whole diff, and an
# explorer's tool calls and answer the files it read.
_QUOTING_EVENTS = (VerificationRan, BaselineRecorded, SessionFinished, ModelCallFailed,
                   ModelFellBack, AuxiliaryModelCall, StepChecked, SystemNote,
                   SubagentToolCall, ExplorerFinished)


def redact_event(event: Event, redactor: Redactor) -> Event:
    """`event` with secrets redacted from its text, if it is one that quotes command output."""
    if not isinstance(event, _QUOTING_EVENTS):
        return event
    found: Counter[str] = Counter()
    data = redactor.redact_data(event.model_dump(mode="json"), found)
    return type(event).model_validate(data) if found else event
