"""The settings a session runs with after its start, folded from its log alone."""

from __future__ import annotations

import pytest

from codeloop.config import Settings
from codeloop.errors import ConfigError
from codeloop.events import ApprovalGiven, SessionStarted, SettingsOverridden
from codeloop.session.resume import session_settings, with_overrides
from codeloop.session.setup import public_settings
from codeloop.session.state import fold


def _started(**settings: object) -> SessionStarted:
    recorded = Settings.model_validate({"model": "openai:m", "api_key": "sk-never-logged",
                                        **settings})
    return SessionStarted(task="t", repo="/r", model="openai:m", config=public_settings(recorded))


def test_the_start_records_every_setting_but_the_key() -> None:
    started = _started(base_url="http://h:1/v1", approval_mode="ask", sandbox=False,
                       small_model="openai:s", verify={"test": "pytest -q"})
    assert "api_key" not in started.config
    settings = session_settings(fold([started]), api_key="sk-now")
    assert (settings.base_url, settings.approval_mode, settings.sandbox) == (
        "http://h:1/v1", "ask", False)
    assert settings.small_model == "openai:s" and settings.verify == {"test": "pytest -q"}
    assert settings.api_key == "sk-now"


def test_overrides_merge_in_order_and_budgets_key_by_key() -> None:
    state = fold([
        _started(budgets={"max_steps": 10, "max_cost_usd": 1.0}),
        SettingsOverridden(changes={"base_url": "http://a:1/v1", "budgets": {"max_steps": 20}}),
        SettingsOverridden(changes={"base_url": "http://b:2/v1"}),
    ])
    settings = session_settings(state)
    assert settings.base_url == "http://b:2/v1"
    assert (settings.budgets.max_steps, settings.budgets.max_cost_usd) == (20, 1.0)


def test_a_flag_that_changes_nothing_records_nothing() -> None:
    state = fold([_started(approval_mode="ask")])
    settings, event = with_overrides(state, {"approval_mode": "ask", "model": None,
                                             "budgets": {"max_steps": 50}})
    assert event is None and settings.approval_mode == "ask"
    _, event = with_overrides(state, {"approval_mode": "full-auto", "budgets": {"max_steps": 7}})
    assert event is not None
    assert event.changes == {"approval_mode": "full-auto", "budgets": {"max_steps": 7}}


def test_a_bad_flag_is_a_config_error_and_the_sandbox_stays() -> None:
    state = fold([_started()])
    with pytest.raises(ConfigError, match="approval_mode"):
        with_overrides(state, {"approval_mode": "sometimes"})
    with pytest.raises(ValueError, match="sandbox"):
        with_overrides(state, {"sandbox": False})


def test_remembered_rules_are_allowed_from_then_on() -> None:
    state = fold([_started(permissions={"allow": ["run(make)"]}),
                  ApprovalGiven(call_id="c1", approved=True, digest="d",
                                remember_rule="run(pytest *)")])
    assert session_settings(state).permissions["allow"] == ["run(make)", "run(pytest *)"]
