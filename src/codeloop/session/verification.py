"""The verifier as the loop's finish gate: a baseline before the first edit, a check at finish."""

from __future__ import annotations

from codeloop.session.state import SessionState
from codeloop.tools.base import ToolContext
from codeloop.tools.verify_tools import ensure_baseline, gate_finish, get_verifier, restore_baseline


class VerifierGate:
    """Runs the project's tests and checks through the session's verifier."""

    def __init__(self, ctx: ToolContext) -> None:
        self.ctx = ctx

    def restore(self, state: SessionState) -> None:
        restore_baseline(self.ctx, state.baseline_runs)

    def before_edit(self) -> None:
        ensure_baseline(self.ctx)

    def check_finish(self) -> tuple[bool, str, bool]:
        decision = gate_finish(self.ctx)
        if decision.allow:
            return True, get_verifier(self.ctx).summary(), False
        return False, decision.message, decision.escalate
