"""Trust for a repository's own `.codeloop/config.toml`.

A cloned repository is somebody else's input. Its config file could point `base_url` at a
server that collects the user's API key, add hooks that run on the host, turn the sandbox off,
allow every command, or raise the budgets. Until the user trusts that exact file (by content
hash, so an edit needs a new look), its layer may only tighten what the layers below it give.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codeloop.private_paths import private_dir
from codeloop.sandbox.base import Limits
from codeloop.workspace.hostfs import SafeRoot

# Keys an untrusted project may set freely: none of them widens what the agent may do.
# Every key not named below is refused, among them `model`, `small_model`, `[models]` (the
# roles and the fallback chain) and `base_url`: which models read the user's code, and which
# server gets their key, is the user's choice alone.
_FREE_KEYS = frozenset({"tool_protocol"})
# Limits it may lower, never raise. A budget of 0 means "no limit" and a timeout or size of
# 0 or less is none at all or a broken one, so only a positive number lowers these.
_LIMITS = frozenset({"max_output_tokens", "context_window", "request_timeout_s"})
# Counts whose tightest setting is 0 (no retries), not "off".
_COUNTS = frozenset({"max_retries"})
# Switches it may only turn to their safe side.
_SAFE_SIDE = {"sandbox": True, "verify_on_finish": True}
# The verifier's own settings (`verify.*`, validated by the verifier): the same rules, with
# the user's own value as the limit; the project's commands fill in only what the user left
# to detection.
_VERIFY_LIMITS = frozenset({"max_fix_rounds", "test_timeout_s", "check_timeout_s",
                            "time_budget_s", "max_related_files", "max_output_bytes"})
_VERIFY_SAFE_SIDE = {"block_on_security": True}
# `[limits]`, each sandboxed command's: lowered only.
_COMMAND_LIMITS = frozenset({"memory_mb", "max_processes", "max_file_mb", "max_open_files"})
_VERIFY_OWN = frozenset({"test", "lint", "typecheck", "security", "python", "env",
                         "baseline_target", "backfill_baseline"})
VERIFY_KEYS = _VERIFY_LIMITS | _VERIFY_SAFE_SIDE.keys() | {"block_on"} | _VERIFY_OWN
# Most cautious first.
_APPROVAL_ORDER = ("ask", "auto-edit", "full-auto")
_REFUSED = object()


@dataclass
class Screened:
    """The project layer that may be used, and the keys left out of it."""

    layer: dict[str, Any]
    ignored: list[str] = field(default_factory=list)


def trust_file(data: Path) -> Path:
    return data / "trusted-projects.json"


def config_digest(repo: Path, config: Path) -> str | None:
    """The hash of the config file `config` in `repo`; None when it is absent or a link
    (never followed: the file trusted is the file in the repository)."""
    try:
        data = SafeRoot(repo).read_if_file(config)
    except OSError:
        return None
    return None if data is None else hashlib.sha256(data).hexdigest()


def _load(data: Path) -> dict[str, str]:
    try:
        loaded = json.loads(trust_file(data).read_text())
    except (OSError, ValueError):
        return {}
    return {str(k): str(v) for k, v in loaded.items()} if isinstance(loaded, dict) else {}


def _save(data: Path, entries: dict[str, str]) -> None:
    private_dir(data)
    path = trust_file(data)
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        json.dump(entries, fh, indent=1, sort_keys=True)
    os.replace(tmp, path)


def is_trusted(repo: Path, config: Path, data: Path) -> bool:
    digest = config_digest(repo, config)
    return digest is not None and _load(data).get(str(repo.resolve())) == digest


def trust(repo: Path, config: Path, data: Path) -> str:
    """Trust the config file as it is now; returns its digest."""
    digest = config_digest(repo, config)
    if digest is None:
        raise FileNotFoundError(config)
    entries = _load(data)
    entries[str(repo.resolve())] = digest
    _save(data, entries)
    return digest


def revoke(repo: Path, data: Path) -> bool:
    entries = _load(data)
    removed = entries.pop(str(repo.resolve()), None) is not None
    if removed:
        _save(data, entries)
    return removed


def screen(project: dict[str, Any], below: dict[str, Any]) -> Screened:
    """Keep what an untrusted `project` layer may set over `below`: the defaults merged with
    the layers under the project's."""
    out = Screened({})
    for key, value in project.items():
        kept, refused = _screen_key(key, value, below)
        if kept is _REFUSED:
            out.ignored.append(key)
            continue
        out.layer[key] = kept
        out.ignored.extend(f"{key}.{name}" for name in refused)
    return out


def _screen_key(key: str, value: Any, below: dict[str, Any]) -> tuple[Any, list[str]]:
    """(what is kept of `value`, or _REFUSED; the sub-keys left out of it)."""
    if key in _FREE_KEYS:
        return value, []
    if key in _SAFE_SIDE:
        return (value, []) if value is _SAFE_SIDE[key] else (_REFUSED, [])
    if key in _LIMITS or key in _COUNTS:
        return (value, []) if _lowers(value, below.get(key), key in _LIMITS) else (_REFUSED, [])
    if key == "approval_mode":
        current = below.get("approval_mode", "full-auto")
        if value in _APPROVAL_ORDER and current in _APPROVAL_ORDER \
                and _APPROVAL_ORDER.index(value) <= _APPROVAL_ORDER.index(current):
            return value, []
        return _REFUSED, []
    if not isinstance(value, dict):
        return _REFUSED, []
    if key == "permissions":
        return {k: v for k, v in value.items() if k != "allow"}, ["allow"] if "allow" in value else []
    if key == "budgets":
        current = below.get("budgets") or {}
        return _keep(value, lambda name, limit: _lowers(limit, current.get(name)))
    if key == "limits":
        current = below.get("limits") or {}
        return _keep(value, lambda name, limit: _lowers(limit, _command_limit(name, current)))
    if key == "verify":
        return _keep(value, lambda name, v: _verify_key(name, v, below.get("verify") or {}))
    if key == "memory":
        # Only off: what a session remembers and recalls is the user's to widen.
        return _keep(value, lambda name, v: name == "enabled" and v is False)
    return _REFUSED, []


def _keep(value: dict[str, Any], allowed: Callable[[str, Any], bool]) -> tuple[Any, list[str]]:
    kept = {name: v for name, v in value.items() if allowed(name, v)}
    return kept, [name for name in value if name not in kept]


def _command_limit(name: str, given: dict[str, Any]) -> Any:
    """The command limit `name` in force below the project: as given, else the sandbox's
    default (None for a name that is no limit)."""
    if given.get(name) is not None:
        return given[name]
    return getattr(Limits(), name, None) if name in _COMMAND_LIMITS else None


def _verify_key(name: str, value: Any, user: dict[str, Any]) -> bool:
    if name in _VERIFY_LIMITS:
        return _lowers(value, user.get(name))  # no value of the user's: no limit to lower
    if name in _VERIFY_SAFE_SIDE:
        return value is _VERIFY_SAFE_SIDE[name]
    if name == "block_on":  # failure kinds that stop `finish`: only more of them
        mine = user.get("block_on")
        return isinstance(value, list) and isinstance(mine, list) and set(mine) <= set(value)
    if name in _VERIFY_OWN:
        return name not in user
    return name not in VERIFY_KEYS  # not a setting: kept, so the verifier reports the typo


def _lowers(value: Any, current: Any, zero_is_off: bool = True) -> bool:
    """Whether the number `value` tightens the limit `current`. Where 0 means "no limit"
    (`zero_is_off`), only a positive value tightens, and any positive one tightens 0."""
    if not (_is_number(value) and _is_number(current)):
        return False  # a string, a bool, inf or nan is never a tighter limit
    if zero_is_off:
        return bool(value > 0 and (current <= 0 or value <= current))
    return bool(0 <= value <= current)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) \
        and math.isfinite(value)
