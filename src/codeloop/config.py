"""Settings, layered: defaults < user file < project file < environment < flags."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from codeloop.config_tables import (
    Budgets,
    HandoffSettings,
    LimitsSettings,
    MemorySettings,
    ModelsSettings,
    NetworkSettings,
    Price,
    RolesSettings,
    ServerSettings,
)
from codeloop.errors import ConfigError
from codeloop.mcp.settings import McpSettings
from codeloop.project_trust import Screened, is_trusted, screen
from codeloop.workspace.hostfs import SafeRoot


class Settings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    model: str | None = None
    base_url: str | None = None
    api_key: str | None = None
    # Kept for configs written before `[models]`: the same as `models.small`.
    small_model: str | None = None
    models: ModelsSettings = Field(default_factory=ModelsSettings)
    roles: RolesSettings = Field(default_factory=RolesSettings)
    max_output_tokens: int = 8192
    context_window: int = 128_000
    request_timeout_s: float = 600.0
    max_retries: int = 5
    budgets: Budgets = Field(default_factory=Budgets)
    limits: LimitsSettings = Field(default_factory=LimitsSettings)
    prices: dict[str, Price] = Field(default_factory=dict)
    approval_mode: Literal["ask", "auto-edit", "full-auto"] = "full-auto"
    # Whether a plan the model proposes waits for a person; unset follows approval_mode
    # (only "ask" asks).
    plan_approval: bool | None = None
    sandbox: bool = True
    sandbox_backend: Literal["auto", "bwrap", "docker"] = "auto"
    docker_image: str = "python:3.11-slim"
    permissions: dict[str, list[str]] = Field(default_factory=dict)
    hooks: list[dict[str, Any]] = Field(default_factory=list)
    verify: dict[str, Any] = Field(default_factory=dict)
    # Take a test baseline before the first edit and gate `finish` on "no new failures".
    verify_on_finish: bool = True
    tool_protocol: Literal["auto", "native", "text"] = "auto"
    # Tokens of the task context's repo map; None: a quarter of the context's tokens, 0: no
    # repo map.
    repo_map_tokens: int | None = Field(default=None, ge=0)
    # Tokens of code context (repo map and snippets) given with the task; None: a fifth of
    # the window's input, at most 20K (session/context_feed.py); 0: none.
    context_tokens: int | None = Field(default=None, ge=0)
    # How long after the session's code index began opening the first model call may be
    # held for the task context (a small repository's is ready well within it; a warm
    # sympy's in ~0.65 s at load 5–7); the model starts without it after that, and it
    # arrives with a later turn.
    context_wait_s: float = Field(default=0.7, ge=0)
    local: dict[str, Any] = Field(default_factory=dict)
    server: ServerSettings = Field(default_factory=ServerSettings)
    handoff: HandoffSettings = Field(default_factory=HandoffSettings)
    network: NetworkSettings = Field(default_factory=NetworkSettings)
    # MCP servers: from the user's own config file only (see `project_layer`).
    mcp: McpSettings = Field(default_factory=McpSettings)
    memory: MemorySettings = Field(default_factory=MemorySettings)

    @property
    def plans_need_approval(self) -> bool:
        if self.plan_approval is not None:
            return self.plan_approval
        return self.approval_mode == "ask"


# Environment variables that map onto settings (flat keys; budgets use a prefix).
_ENV = {
    "CODELOOP_MODEL": "model",
    "CODELOOP_BASE_URL": "base_url",
    "CODELOOP_API_KEY": "api_key",
    "CODELOOP_SMALL_MODEL": "small_model",
    "CODELOOP_APPROVAL_MODE": "approval_mode",
    "CODELOOP_PLAN_APPROVAL": "plan_approval",
    "CODELOOP_TOOL_PROTOCOL": "tool_protocol",
}
_ENV_BUDGETS = {
    "CODELOOP_MAX_STEPS": "max_steps",
    "CODELOOP_MAX_COST_USD": "max_cost_usd",
    "CODELOOP_MAX_TOKENS": "max_tokens",
    "CODELOOP_WALL_CLOCK_S": "wall_clock_s",
    "CODELOOP_COMMAND_TIMEOUT_S": "command_timeout_s",
}


def user_config_dir() -> Path:
    """The user's own codeloop directory (`$XDG_CONFIG_HOME/codeloop`): trusted input."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "codeloop"


def user_config_path() -> Path:
    return user_config_dir() / "config.toml"


def user_instructions_path() -> Path:
    """The user's own instructions for every session, beside their config file."""
    return user_config_dir() / "AGENTS.md"


def project_config_path(repo: Path) -> Path:
    return repo / ".codeloop" / "config.toml"


def _read_toml(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except (tomllib.TOMLDecodeError, OSError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}", "fix the TOML syntax in that file") from exc


def _read_project_toml(repo: Path, path: Path) -> dict[str, Any]:
    """The repository's config file, read with no link followed (a link there is no file)."""
    try:
        data = SafeRoot(repo).read_if_file(path)
        return {} if data is None else tomllib.loads(data.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, OSError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}", "fix the TOML syntax in that file") from exc


def merge_layers(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """`over` on top of `base`; tables (budgets, verify, ...) merge key by key."""
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge_layers(out[key], value)
        else:
            out[key] = value
    return out


def _from_env(env: dict[str, str]) -> dict[str, Any]:
    layer: dict[str, Any] = {}
    for var, key in _ENV.items():
        if env.get(var):
            layer[key] = env[var]
    budgets = {key: env[var] for var, key in _ENV_BUDGETS.items() if env.get(var)}
    if budgets:
        layer["budgets"] = budgets
    if env.get("CODELOOP_ROLES"):
        layer["roles"] = {"enabled": env["CODELOOP_ROLES"]}
    if env.get("CODELOOP_NO_SANDBOX") == "1":
        layer["sandbox"] = False
    return layer


def load_settings(
    repo: Path | None = None,
    flags: dict[str, Any] | None = None,
    env: dict[str, str] | None = None,
    user_file: Path | None = None,
) -> Settings:
    """Build the settings for a run from every layer, later layers winning.

    An untrusted project file only tightens (see `project_trust`)."""
    env = dict(os.environ) if env is None else env
    layers = [_read_toml(user_file or user_config_path())]
    if repo is not None:
        layers.append(project_layer(repo, layers[0], env).layer)
    layers.append(_from_env(env))
    layers.append({k: v for k, v in (flags or {}).items() if v is not None})
    merged: dict[str, Any] = {}
    for layer in layers:
        merged = merge_layers(merged, layer)
    return settings_from(merged)


def settings_from(data: dict[str, Any], hint: str | None = None) -> Settings:
    """Validated settings, or a `ConfigError` naming each bad key."""
    try:
        return Settings.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in exc.errors()
        )
        raise ConfigError(
            f"invalid configuration: {problems}",
            hint or f"check {user_config_path()}, .codeloop/config.toml and CODELOOP_* variables",
        ) from exc


# Keys a repository's config file never sets, even once trusted.
USER_ONLY_KEYS = ("mcp",)


def project_layer(repo: Path, user: dict[str, Any], env: dict[str, str] | None = None
                  ) -> Screened:
    """The repository's config file as far as it may apply, and what was left out."""
    path = project_config_path(repo)
    raw = _read_project_toml(repo, path)
    # An MCP server is a process started on the host (or a service handed the user's
    # headers): only the user's own file declares one, trusted repository or not.
    own_only = [key for key in USER_ONLY_KEYS if key in raw]
    raw = {k: v for k, v in raw.items() if k not in USER_ONLY_KEYS}
    if not raw or is_trusted(repo, path, data_dir(env)):
        return Screened(raw, own_only)
    screened = screen(raw, merge_layers(Settings().model_dump(), user))
    screened.ignored.extend(own_only)
    return screened


def ignored_project_keys(repo: Path, env: dict[str, str] | None = None,
                         user_file: Path | None = None) -> list[str]:
    """Keys of the repository's config file that are not applied until it is trusted."""
    return project_layer(repo, _read_toml(user_file or user_config_path()), env).ignored


def data_dir(env: dict[str, str] | None = None) -> Path:
    """Where sessions and the event store live."""
    env = dict(os.environ) if env is None else env
    if env.get("CODELOOP_DATA_DIR"):
        return Path(env["CODELOOP_DATA_DIR"]).expanduser()
    base = env.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "codeloop"
