"""The commit message for a session's change set: written by the small model from the task,
the plan and the diff (the router's `commit_message` purpose), or made from them by rule
when no model answers. Either way it is scrubbed, redacted and recorded."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from codeloop.config import Settings
from codeloop.config_tables import HandoffSettings
from codeloop.errors import CodeloopError
from codeloop.events import CommitMessageWritten, Event
from codeloop.llm.roles import make_role_models, make_router
from codeloop.llm.types import Message, ModelError, ModelRequest
from codeloop.planner.model import Plan
from codeloop.planner.render import render_plan
from codeloop.policy.redact import Redactor
from codeloop.policy.scrub import scrub
from codeloop.policy.untrusted import inspect, wrap_untrusted
from codeloop.session.routing import RoutedCalls
from codeloop.session.state import SessionState

SUBJECT_MAX = 72
BODY_MAX = 4000
DIFF_MAX = 12_000

SYSTEM = (
    "You write git commit messages. Answer with the message only: a subject line in the "
    f"imperative mood of at most {SUBJECT_MAX} characters, a blank line, then a short body "
    "(wrapped at 72 columns) saying what changed and why. No code fences, no trailers, no "
    "preamble."
)


@dataclass(frozen=True)
class Written:
    message: str
    source: Literal["model", "fallback"]
    reason: str = ""


def _plan_text(plan: Plan | None) -> str:
    return render_plan(plan, progress=False) if plan is not None else "(no plan)"


def fallback_message(task: str, plan: Plan | None, files: list[str]) -> str:
    """A message by rule: the task's first line as the subject, the plan and files below."""
    first = next((line.strip() for line in task.splitlines() if line.strip()), "codeloop changes")
    subject = first if len(first) <= SUBJECT_MAX else first[:SUBJECT_MAX - 1].rstrip() + "…"
    body = []
    if plan is not None:
        body.append(plan.summary.strip())
        body += [f"- {s.title}" for s in plan.steps if s.status != "skipped"]
        body.append("")
    body.append("Files: " + ", ".join(files[:20]) + (" …" if len(files) > 20 else ""))
    return subject + "\n\n" + "\n".join(body).strip()


def clean(text: str, redactor: Redactor) -> str:
    """The model's answer as a commit message: no escapes or hidden text, no secrets, no
    fences, a subject of bounded length; "" if nothing usable is left."""
    text = redactor.redact(scrub(text).text).text.strip()
    lines = [line.rstrip() for line in text.splitlines() if not line.strip().startswith("```")]
    while lines and not lines[0].strip():
        lines.pop(0)
    if not lines:
        return ""
    subject = lines[0].strip().strip("\"'")
    if len(subject) > SUBJECT_MAX:
        subject = subject[:SUBJECT_MAX - 1].rstrip() + "…"
    body = "\n".join(lines[1:]).strip()[:BODY_MAX]
    return subject + ("\n\n" + body if body else "")


def with_trailers(message: str, handoff: HandoffSettings, session_id: str) -> str:
    """The message with the configured trailers after a blank line."""
    trailers = [f"Co-authored-by: {who}" for who in handoff.co_authors]
    if handoff.session_trailer:
        trailers.append(f"Codeloop-Session: {session_id}")
    return message.rstrip() + ("\n\n" + "\n".join(trailers) if trailers else "") + "\n"


def _prompt(state: SessionState, diff: str) -> list[Message]:
    task = state.started.task if state.started else ""
    shown = diff if len(diff) <= DIFF_MAX else diff[:DIFF_MAX] + "\n[diff cut here]"
    checked = inspect(shown)
    user = (f"Task given to the agent:\n{task}\n\n{_plan_text(state.plan)}\n\nThe change:\n"
            + wrap_untrusted(checked.text, checked.flags, checked.notes, what="DIFF"))
    return [Message("system", SYSTEM), Message("user", user)]


def write_message(state: SessionState, settings: Settings | None, diff: str, files: list[str],
                  digest: str, emit: Callable[[Event], None], state_now: Callable[[], SessionState]
                  ) -> Written:
    """Ask the small model (calls recorded through `emit`); fall back to the rule's message
    when no model is configured or the call fails. Records `CommitMessageWritten`."""
    task = state.started.task if state.started else ""
    written: Written | None = None
    reason = "no model is configured"
    if settings is not None:
        try:
            calls = RoutedCalls(make_router(settings, make_role_models(settings)), emit,
                                state_now)
            request = ModelRequest(_prompt(state, diff), max_tokens=600, stream=False,
                                   step=state.steps)
            text = clean(calls.side("commit_message", request).text,
                         Redactor.from_environment(extra=[("API key", settings.api_key)]))
            written = Written(text, "model") if text else None
            reason = "the model's answer was empty"
        except ModelError as exc:
            reason = f"the model call failed ({exc.kind})"
        except CodeloopError as exc:
            reason = exc.message
    if written is None:
        written = Written(fallback_message(task, state.plan, files), "fallback", reason)
    emit(CommitMessageWritten(message=written.message, source=written.source, digest=digest,
                              reason=written.reason))
    return written


def recorded_message(state_events: list[Event], digest: str) -> Written | None:
    """The last message written for this very change set, if any."""
    for event in reversed(state_events):
        if isinstance(event, CommitMessageWritten) and event.digest == digest:
            return Written(event.message, event.source, event.reason)
    return None
