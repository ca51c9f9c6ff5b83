"""Verification: detect a project's tests and checks, run them in the sandbox, parse the
output into failures, compare with the baseline, and gate `finish`."""

from __future__ import annotations

from codeloop.verify.gate import GateDecision, GateRound, check_finish
from codeloop.verify.models import Failure, RunResult
from codeloop.verify.settings import VerifySettings
from codeloop.verify.verification import Verification
from codeloop.verify.verifier import Verifier

__all__ = [
    "Failure",
    "GateDecision",
    "GateRound",
    "RunResult",
    "Verification",
    "Verifier",
    "VerifySettings",
    "check_finish",
]
