"""The settings a session runs with after its start: the CLI's `resume` and the server's worker
both take them from the log, so a session keeps its endpoint, approvals and budgets."""

from __future__ import annotations

from typing import Any

from codeloop.config import Settings, merge_layers, settings_from
from codeloop.errors import CodeloopError
from codeloop.events import SettingsOverridden
from codeloop.session.state import SessionState

# What a flag given to `resume` may change. Not the sandbox: the workspace was made for the
# isolation the session started with, and turning isolation off halfway would hand a model
# that has already read the repository's text a host shell it was never given.
RESUME_FLAGS = frozenset({"model", "base_url", "approval_mode", "plan_approval", "budgets"})


def remembered_rules(state: SessionState) -> list[str]:
    """The `allow` rules a person chose to remember when answering an approval."""
    return [a.remember_rule for a in state.approvals.values() if a.remember_rule]


def session_settings(state: SessionState, api_key: str | None = None) -> Settings:
    """The settings recorded at the start, every override since and every remembered rule.

    The API key is never recorded: it is the caller's own (its config or environment)."""
    if state.started is None:
        raise CodeloopError(f"session {state.session_id} has no start event")
    data = merge_layers(state.started.config, state.overrides)
    rules = remembered_rules(state)
    if rules:
        permissions = {k: list(v) for k, v in data.get("permissions", {}).items()}
        permissions["allow"] = [*permissions.get("allow", []), *rules]
        data["permissions"] = permissions
    return settings_from({**data, "api_key": api_key},
                         hint="the session was recorded by a codeloop that knew other settings")


def with_overrides(state: SessionState, flags: dict[str, Any], api_key: str | None = None
                   ) -> tuple[Settings, SettingsOverridden | None]:
    """The session's settings with the flags a person gave (None: not given) over them, and
    the event that records what they change (None when they change nothing)."""
    current = session_settings(state, api_key)
    changes: dict[str, Any] = {}
    for key, value in flags.items():
        if value is None:
            continue
        if key not in RESUME_FLAGS:
            raise ValueError(f"{key} cannot be changed on resume")
        if key == "budgets":
            budgets = {k: v for k, v in value.items() if getattr(current.budgets, k) != v}
            if budgets:
                changes["budgets"] = budgets
        elif getattr(current, key) != value:
            changes[key] = value
    if not changes:
        return current, None
    settings = settings_from(merge_layers(current.model_dump(), changes),
                             hint="check the flags given to `codeloop resume`")
    return settings, SettingsOverridden(changes=changes)
