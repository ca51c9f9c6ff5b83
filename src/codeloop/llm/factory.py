"""Build a `Model` from a `provider:model` spec and the settings."""

from __future__ import annotations

import os
from pathlib import Path

from codeloop.config import Settings
from codeloop.errors import ConfigError
from codeloop.llm import endpoint
from codeloop.llm.endpoint import checked_base_url
from codeloop.llm.pricing import find_price
from codeloop.llm.scripted import ScriptedModel
from codeloop.llm.textmode import AutoProtocolModel, TextModeModel
from codeloop.llm.types import Model

NO_MODEL_HINT = (
    "pass --model PROVIDER:MODEL (e.g. openai:gpt-4.1, anthropic:claude-sonnet-4-5, or "
    "openai:NAME with --base-url http://localhost:11434/v1 for Ollama), or set `model = ...` "
    "in ~/.config/codeloop/config.toml or CODELOOP_MODEL; keys come from OPENAI_API_KEY / "
    "ANTHROPIC_API_KEY. Try `codeloop demo` to see a session without a key."
)


_PROVIDERS = ("openai", "oai", "openai-compatible", "anthropic", "scripted", "local")
_OPENAI = ("openai", "oai", "openai-compatible")


def parse_spec(spec: str | None) -> tuple[str, str]:
    """`PROVIDER:NAME` as (provider, name), or a `ConfigError` that says what is missing."""
    if not spec:
        raise ConfigError("no model is configured", NO_MODEL_HINT)
    provider, colon, name = spec.partition(":")
    if not colon:
        raise ConfigError(f"model {spec!r} names no provider",
                          f"write PROVIDER:MODEL, e.g. openai:{spec} or anthropic:{spec}")
    if provider not in _PROVIDERS:
        raise ConfigError(f"unknown model provider {provider!r} in {spec!r}", NO_MODEL_HINT)
    if not name.strip():
        raise ConfigError(f"model {spec!r} has no name after {provider + ':'!r}",
                          f"write {provider}:NAME, e.g. openai:gpt-4.1")
    return provider, name


def _openai_endpoint(settings: Settings) -> tuple[str | None, str | None]:
    """The key and base URL an OpenAI-compatible model uses (settings, then OpenAI's variables)."""
    base_url = settings.base_url or os.environ.get("OPENAI_BASE_URL")
    key = settings.api_key or os.environ.get("OPENAI_API_KEY")
    return key, checked_base_url(base_url) if base_url else None


def make_model(spec: str | None, settings: Settings) -> Model:
    """`openai:M`, `anthropic:M`, `scripted:FILE` or `local:FILE.gguf`; nothing is contacted."""
    provider, name = parse_spec(spec)
    price = find_price(name, settings.prices)
    if provider in _OPENAI:
        from codeloop.llm.openai_provider import OpenAIModel

        key, base_url = _openai_endpoint(settings)
        if not key and not base_url:
            raise ConfigError(
                "no API key for OpenAI",
                "set OPENAI_API_KEY, or api_key in the config; for a local server give --base-url",
            )
        # OpenAI's own API always supports tools; only another server is worth deciding for.
        return with_tool_protocol(
            OpenAIModel(name, api_key=key, base_url=base_url, price=price,
                        max_retries=settings.max_retries, timeout_s=settings.request_timeout_s),
            settings, probe=base_url is not None)
    if provider == "anthropic":
        from codeloop.llm.anthropic_provider import AnthropicModel

        key = settings.api_key or os.environ.get("ANTHROPIC_API_KEY")
        if settings.base_url:
            checked_base_url(settings.base_url)
        if not key and not settings.base_url:
            raise ConfigError("no API key for Anthropic",
                              "set ANTHROPIC_API_KEY, or api_key in the config")
        # Anthropic's API always supports tools: `auto` means native, with no probe.
        return with_tool_protocol(
            AnthropicModel(name, api_key=key, base_url=settings.base_url, price=price,
                           max_retries=settings.max_retries,
                           timeout_s=settings.request_timeout_s),
            settings, probe=False)
    if provider == "scripted":
        return ScriptedModel.from_file(Path(name))
    from codeloop.llm.local_provider import LocalModel  # "local", the one provider left

    return with_tool_protocol(LocalModel(Path(name).expanduser(), settings.local), settings)


def pinned_endpoint(spec: str | None, settings: Settings) -> Settings:
    """The settings naming the base URL an OpenAI-compatible model takes from OPENAI_BASE_URL,
    so that a session's log records the endpoint it really talks to (and resumes there)."""
    provider, _ = parse_spec(spec)
    from_env = os.environ.get("OPENAI_BASE_URL")
    if provider in _OPENAI and not settings.base_url and from_env:
        return settings.model_copy(update={"base_url": from_env})
    return settings


def check_endpoint(spec: str | None, settings: Settings) -> None:
    """One short probe of the server a model given a base URL will call (none otherwise):
    nothing listening, or a refused key, is an `EndpointUnreachable` within seconds."""
    provider, _ = parse_spec(spec)
    if provider in _OPENAI:
        key, base_url = _openai_endpoint(settings)
        if base_url:
            endpoint.probe(base_url, "/models",
                           {"Authorization": f"Bearer {key}"} if key else None)
    elif provider == "anthropic" and settings.base_url:
        endpoint.probe(checked_base_url(settings.base_url))


def with_tool_protocol(model: Model, settings: Settings, probe: bool = True) -> Model:
    """Apply `settings.tool_protocol`: native calls, text-mode actions, or decide (auto)."""
    if settings.tool_protocol == "native" or (settings.tool_protocol == "auto" and not probe):
        return model
    if settings.tool_protocol == "text":
        return TextModeModel(model, reason="tool_protocol = text in the settings")
    return AutoProtocolModel(model)
