"""The model each role uses, from the settings: `[models]`, else `model` (`--model`) for all.

A role `[models]` does not name takes `model`; `small` also honours the older `small_model`,
`escalate` the planner's and `explorer` the small model's. Every role's chain then continues with `[models] fallback`.
"""

from __future__ import annotations

from collections.abc import Callable

from codeloop.config import Settings
from codeloop.config_tables import ModelChoice
from codeloop.errors import ConfigError
from codeloop.llm.factory import NO_MODEL_HINT, make_model
from codeloop.llm.router import ROLES, RoleModels, Router
from codeloop.llm.types import Model

ModelMaker = Callable[[str, Settings], Model]


def _choice(value: str | ModelChoice | None) -> ModelChoice | None:
    if value is None or isinstance(value, ModelChoice):
        return value
    return ModelChoice(model=value)


def role_choice(settings: Settings, role: str) -> ModelChoice:
    """The model `role` uses before any fallback; a `ConfigError` when none is configured."""
    named = settings.models
    small = named.small or settings.small_model
    own = {"planner": named.planner, "coder": named.coder, "small": small,
           "reviewer": named.reviewer, "escalate": named.escalate or named.planner,
           "explorer": named.explorer or small}[role]
    picked = _choice(own) or _choice(settings.model) or _choice(named.coder)
    if picked is None:
        raise ConfigError("no model is configured", NO_MODEL_HINT)
    return picked


def main_choice(settings: Settings) -> ModelChoice:
    """The coder's model: the session's main model (its name is the session's model)."""
    return role_choice(settings, "coder")


def settings_for(choice: ModelChoice, settings: Settings) -> Settings:
    """The settings a model is made with: its own base URL over the shared one."""
    if choice.base_url is None:
        return settings
    return settings.model_copy(update={"base_url": choice.base_url})


def make_role_models(settings: Settings, make: ModelMaker = make_model,
                     made: dict[tuple[str, str | None], Model] | None = None) -> RoleModels:
    """Each role's chain of models, every distinct model made once (one-model setups make
    exactly one); `made` holds models already made, by (spec, base URL)."""
    cache = dict(made or {})

    def model(choice: ModelChoice) -> Model:
        key = (choice.model, choice.base_url)
        if key not in cache:
            cache[key] = make(choice.model, settings_for(choice, settings))
        return cache[key]

    fallbacks = [c for c in (_choice(v) for v in settings.models.fallback) if c is not None]
    chains: dict[str, tuple[Model, ...]] = {}
    for role in ROLES:
        chain: list[Model] = []
        for choice in [role_choice(settings, role), *fallbacks]:
            made_model = model(choice)
            if made_model not in chain:
                chain.append(made_model)
        chains[role] = tuple(chain)
    return RoleModels(chains)


def make_router(settings: Settings, models: RoleModels) -> Router:
    return Router(models, escalate_after=settings.models.escalate_after)
