"""Settings, layered: defaults < user file < project file < environment < flags."""

from __future__ import annotations

import os
import re
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from codeloop.errors import ConfigError
from codeloop.mcp.settings import McpSettings
from codeloop.project_trust import Screened, is_trusted, screen
from codeloop.sandbox.egress_rules import BadEntry, parse_entry
from codeloop.workspace.hostfs import SafeRoot


class Budgets(BaseModel):
    model_config = ConfigDict(extra="forbid")

    max_steps: int = 50
    max_cost_usd: float = 5.0
    max_tokens: int = 2_000_000
    wall_clock_s: float = 3600.0
    command_timeout_s: float = 300.0
    warn_fraction: float = 0.8


class Price(BaseModel):
    """Dollars per million tokens."""

    input: float
    output: float
    cache_read: float | None = None
    cache_write: float | None = None


class ModelChoice(BaseModel):
    """A model spec with its own endpoint: `{model = "openai:qwen", base_url = "http://..."}`."""

    model_config = ConfigDict(extra="forbid")

    model: str
    base_url: str | None = None


class ModelsSettings(BaseModel):
    """`[models]`: the model each role uses (unset: `model`) and the chain to fall back on."""

    model_config = ConfigDict(extra="forbid")

    planner: str | ModelChoice | None = None
    coder: str | ModelChoice | None = None
    small: str | ModelChoice | None = None
    reviewer: str | ModelChoice | None = None
    # The larger model the coder's turns move to after `escalate_after` failed fix rounds in
    # a row (unset: the planner's).
    escalate: str | ModelChoice | None = None
    # The read-only explorers the coder starts (`explore`); unset: the small model's.
    explorer: str | ModelChoice | None = None
    fallback: list[str | ModelChoice] = Field(default_factory=list)
    # 0: never escalate.
    escalate_after: int = Field(default=3, ge=0)


class RolesSettings(BaseModel):
    """`[roles]`: planner, coder and reviewer working one plan (docs/models.md)."""

    model_config = ConfigDict(extra="forbid")

    # Off: one agent does everything (the plan is advice). On: planner, coder and reviewer
    # take turns on one log and the loop executes the plan step by step.
    enabled: bool = False
    # The reviewer checks the whole diff before the session finishes.
    review: bool = True
    # How many times the reviewer may send the work back (K).
    max_reviews: int = Field(default=2, ge=0)
    # How many times a failed step may make the planner revise the plan.
    max_replans: int = Field(default=2, ge=0)
    # Each role's share of the session's budgets (turns, tokens, cost); a step's share of
    # them (its coder turns and their cost).
    planner_share: float = Field(default=0.25, gt=0, le=1)
    coder_share: float = Field(default=1.0, gt=0, le=1)
    reviewer_share: float = Field(default=0.25, gt=0, le=1)
    explorer_share: float = Field(default=0.25, gt=0, le=1)
    step_share: float = Field(default=0.5, gt=0, le=1)
    # Turns one explorer may take before it must answer.
    explorer_turns: int = Field(default=6, ge=1)


class ServerSettings(BaseModel):
    """`codeloop serve`: where the repositories a client may name live."""

    model_config = ConfigDict(extra="forbid")

    # Sessions may open repositories only inside these directories (plus --allow-root);
    # with none at all, the directory `serve` was started in.
    allowed_roots: list[str] = Field(default_factory=list)


class HandoffSettings(BaseModel):
    """`[handoff]`: who a branch commit is by, and the trailers its message ends with."""

    model_config = ConfigDict(extra="forbid")

    # "Name <email>"; None: your git identity (user.name / user.email).
    author: str | None = None
    # Each "Name <email>", written as a `Co-authored-by:` trailer.
    co_authors: list[str] = Field(default_factory=list)
    # A `Codeloop-Session: ID` trailer, so the commit leads back to its session.
    session_trailer: bool = True

    @field_validator("author")
    @classmethod
    def _author(cls, value: str | None) -> str | None:
        return None if value is None else _identity(value)

    @field_validator("co_authors")
    @classmethod
    def _co_authors(cls, value: list[str]) -> list[str]:
        return [_identity(v) for v in value]


def _identity(value: str) -> str:
    """`Name <email>` as git writes an identity; one line, nothing else."""
    match = re.fullmatch(r"([^<>\n]+?) *<([^<>\s]+@[^<>\s]+)>", value.strip())
    if match is None:
        raise ValueError(f"{value!r} is not `Name <email>`")
    return f"{match.group(1).strip()} <{match.group(2)}>"


class NetworkSettings(BaseModel):
    """`[network]`: what sandboxed commands may reach, only ever through the egress proxy.

    Off by default (no network at all). `allow` entries are spelled as in
    `sandbox/egress_rules.py`: `pypi.org`, `*.pythonhosted.org`, `name:port`, or an exact
    `address:port`, the only way to a private or loopback address (a local registry)."""

    model_config = ConfigDict(extra="forbid")

    allow: list[str] = Field(default_factory=list)
    # None: on when `allow` names a host. True with an empty list: only hosts the user
    # allows mid-session (`ask` mode) are reached.
    enabled: bool | None = None

    @field_validator("allow")
    @classmethod
    def _entries(cls, value: list[str]) -> list[str]:
        for text in value:
            try:
                parse_entry(text)
            except BadEntry as exc:
                raise ValueError(str(exc)) from None
        return value

    @property
    def on(self) -> bool:
        return bool(self.allow) if self.enabled is None else self.enabled


class MemorySettings(BaseModel):
    """`[memory]`: long-term memory across sessions (docs/memory.md)."""

    model_config = ConfigDict(extra="forbid")

    # Off: no recall into the prompt, no remember/recall tools, nothing captured.
    enabled: bool = True
    # What recall may put into the system prompt, and how many memories at most.
    recall_tokens: int = Field(default=1200, ge=0)
    top_k: int = Field(default=8, ge=0, le=50)


class LimitsSettings(BaseModel):
    """`[limits]`: what each sandboxed command (the agent's and the verifier's) may use; its
    wall time is `budgets.command_timeout_s`. Unset: the sandbox's defaults (docs/sandbox.md)."""

    model_config = ConfigDict(extra="forbid")

    # The whole command tree's memory, and each process's address space (the JVM and Go
    # reserve more than they use, so their builds may need more than the default 4 GB).
    memory_mb: int | None = Field(default=None, ge=256)
    # Tasks of the command tree, threads included (default: 1,024, or 32 per core if more).
    max_processes: int | None = Field(default=None, ge=16)
    max_file_mb: int | None = Field(default=None, ge=1)
    max_open_files: int | None = Field(default=None, ge=64)

    def given(self) -> dict[str, int]:
        """The limits the user set, by name."""
        return {name: value for name, value in self.model_dump().items() if value is not None}


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
