"""The verifier as the loop's finish gate: a baseline before the first edit, a check at finish."""

from __future__ import annotations

from codeloop.tools.base import ToolContext
from codeloop.tools.verify_tools import get_verifier


class VerifierGate:
    """Runs the project's tests and checks through the session's verifier."""

    def __init__(self, ctx: ToolContext) -> None:
        self.ctx = ctx

    def before_edit(self) -> None:
        """Take the baseline once, on the untouched tree, so "done" means "no new failures"."""
        verifier = get_verifier(self.ctx)
        if not verifier.baseline_taken:
            self.ctx.emit(verifier.baseline().event())

    def check_finish(self) -> tuple[bool, str, bool]:
        verifier = get_verifier(self.ctx)
        decision, ran = verifier.check_finish()
        if ran is not None:
            self.ctx.emit(ran.event())
        if decision.allow:
            return True, verifier.summary(), False
        return False, decision.message, decision.escalate
