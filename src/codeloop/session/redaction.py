"""What a session hides, built from its settings: shared by sessions and the memory commands,
which must not import the whole session set-up (the code index, the sandbox) to get it."""

from __future__ import annotations

from codeloop.config import Settings
from codeloop.policy.redact import Redactor


def session_redactor(settings: Settings) -> Redactor:
    """What a session hides from its log and its model: the user's secret-named environment
    variables, the API key wherever it was configured, and known credential shapes."""
    return Redactor.from_environment(extra=[("the configured api key", settings.api_key)])
