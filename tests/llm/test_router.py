"""Which model serves which call: `[models]` and `--model`, the chains, the router's rules."""

from __future__ import annotations

from pathlib import Path

import pytest

from codeloop.config import Settings, load_settings
from codeloop.config_tables import ModelChoice
from codeloop.errors import ConfigError
from codeloop.llm.roles import main_choice, make_role_models, make_router, role_choice
from codeloop.llm.router import ROLES, SMALL_PURPOSES, RoleModels, Router, Signals
from codeloop.llm.scripted import ScriptedModel
from codeloop.llm.types import Model


class Made:
    """A model factory that makes scripted stand-ins and counts what it was asked for."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str | None]] = []

    def __call__(self, spec: str, settings: Settings) -> Model:
        self.calls.append((spec, settings.base_url))
        return ScriptedModel([], name=f"{spec}@{settings.base_url}" if settings.base_url
                             else spec)


def names(models: RoleModels, role: str) -> list[str]:
    return [m.name for m in models.chain(role)]


def test_one_model_serves_every_role_and_is_made_once() -> None:
    made = Made()
    models = make_role_models(Settings(model="openai:gpt-4.1"), made)
    assert made.calls == [("openai:gpt-4.1", None)]
    assert {role: names(models, role) for role in ROLES} == {
        role: ["openai:gpt-4.1"] for role in ROLES}


def test_models_table_names_roles_and_model_fills_the_rest() -> None:
    settings = Settings(model="anthropic:claude-sonnet-4-5", models={
        "planner": "anthropic:claude-opus-4-5", "small": "openai:gpt-4.1-mini"})
    assert role_choice(settings, "planner").model == "anthropic:claude-opus-4-5"
    assert role_choice(settings, "coder").model == "anthropic:claude-sonnet-4-5"
    assert role_choice(settings, "reviewer").model == "anthropic:claude-sonnet-4-5"
    assert role_choice(settings, "small").model == "openai:gpt-4.1-mini"
    # Escalation goes to the planner's (larger) model unless `escalate` is named.
    assert role_choice(settings, "escalate").model == "anthropic:claude-opus-4-5"
    named = settings.model_copy(update={"models": settings.models.model_copy(
        update={"escalate": "openai:o3"})})
    assert role_choice(named, "escalate").model == "openai:o3"


def test_small_model_is_an_alias_of_models_small() -> None:
    old = Settings(model="openai:gpt-4.1", small_model="openai:gpt-4.1-nano")
    assert role_choice(old, "small").model == "openai:gpt-4.1-nano"
    both = Settings(model="openai:gpt-4.1", small_model="openai:gpt-4.1-nano",
                    models={"small": "openai:gpt-4.1-mini"})
    assert role_choice(both, "small").model == "openai:gpt-4.1-mini"


def test_a_coder_alone_is_a_complete_setup_and_nothing_is_an_error() -> None:
    assert main_choice(Settings(models={"coder": "openai:gpt-4.1"})).model == "openai:gpt-4.1"
    with pytest.raises(ConfigError) as info:
        role_choice(Settings(), "coder")
    assert "no model is configured" in info.value.message and "--model" in info.value.hint


def test_fallback_chain_follows_each_role_with_its_own_endpoints(tmp_path: Path) -> None:
    user = tmp_path / "config.toml"
    user.write_text(
        'model = "openai:gpt-4.1"\n'
        "[models]\n"
        'small = "openai:gpt-4.1-mini"\n'
        'fallback = ["anthropic:claude-sonnet-4-5", '
        '{model = "openai:qwen", base_url = "http://127.0.0.1:8000/v1"}, "openai:gpt-4.1"]\n'
        "escalate_after = 2\n")
    settings = load_settings(None, {}, env={}, user_file=user)
    assert settings.models.fallback[1] == ModelChoice(model="openai:qwen",
                                                      base_url="http://127.0.0.1:8000/v1")
    made = Made()
    models = make_role_models(settings, made)
    assert names(models, "coder") == ["openai:gpt-4.1", "anthropic:claude-sonnet-4-5",
                                      "openai:qwen@http://127.0.0.1:8000/v1"]
    assert names(models, "small") == ["openai:gpt-4.1-mini", "anthropic:claude-sonnet-4-5",
                                      "openai:qwen@http://127.0.0.1:8000/v1", "openai:gpt-4.1"]
    # Every distinct model is made once, whatever roles share it.
    assert sorted(made.calls, key=str) == sorted(
        [("openai:gpt-4.1", None), ("openai:gpt-4.1-mini", None),
         ("anthropic:claude-sonnet-4-5", None), ("openai:qwen", "http://127.0.0.1:8000/v1")],
        key=str)
    assert make_router(settings, models).escalate_after == 2


def test_a_bad_models_table_names_the_key(tmp_path: Path) -> None:
    user = tmp_path / "config.toml"
    user.write_text('[models]\nplaner = "openai:gpt-4.1"\n')
    with pytest.raises(ConfigError) as info:
        load_settings(None, {}, env={}, user_file=user)
    assert "models.planer" in info.value.message


def roles_router(escalate_after: int = 3) -> Router:
    return Router(RoleModels({role: (ScriptedModel([], name=role),
                                     ScriptedModel([], name="backup"))
                              for role in ROLES}), escalate_after)


def test_planning_turns_go_to_the_planner_and_code_turns_to_the_coder() -> None:
    router = roles_router()
    planning = router.turn(Signals(planning=True))
    assert (planning.purpose, planning.role, planning.model) == ("planning", "planner", "planner")
    coding = router.turn(Signals())
    assert (coding.purpose, coding.role, coding.model) == ("coding", "coder", "coder")


def test_escalation_after_n_failed_fix_rounds_and_never_with_zero() -> None:
    router = roles_router(escalate_after=2)
    assert router.turn(Signals(failed_rounds=1)).role == "coder"
    route = router.turn(Signals(failed_rounds=2))
    assert (route.purpose, route.role, route.model) == ("coding", "escalate", "escalate")
    assert "2 failed fix rounds" in route.reason
    assert roles_router(escalate_after=0).turn(Signals(failed_rounds=50)).role == "coder"


def test_condensing_purposes_go_to_the_small_model() -> None:
    router = roles_router()
    for purpose in sorted(SMALL_PURPOSES):
        route = router.side(purpose)
        assert (route.role, route.model) == ("small", "small"), purpose
    assert router.side("review").role == "reviewer"
    assert {"compaction", "file_summary", "step_classification", "commit_message",
            "relevance_check"} <= SMALL_PURPOSES


def test_a_held_fallback_starts_the_chain_and_the_primary_comes_last() -> None:
    router = roles_router()
    route = router.turn(Signals(held={"coder": "backup"}))
    assert [m.name for m in route.chain] == ["backup", "coder"]
    assert "held on backup" in route.reason
    # A held model another role does not have changes nothing there.
    assert router.turn(Signals(held={"coder": "elsewhere"})).model == "coder"
