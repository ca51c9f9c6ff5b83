"""What may end a session: the finish statuses and the gate `finish` passes through."""

from __future__ import annotations

from typing import Literal, Protocol

from codeloop.session.state import SessionState

FinishStatus = Literal["finished", "budget_exceeded", "stuck", "stopped", "error",
                       "context_overflow", "needs_human", "cancelled"]


class FinishGate(Protocol):
    """Decides whether `finish` may end the session (the verifier plugs in here)."""

    def restore(self, state: SessionState) -> None:
        """Called when the runner starts on a session's log (what a resume must remember)."""
        ...

    def before_edit(self) -> None:
        """Called before a tool that writes files runs (a baseline can be taken here)."""
        ...

    def check_finish(self) -> tuple[bool, str, bool]:
        """(allow, message for the model, escalate to a human)."""
        ...
