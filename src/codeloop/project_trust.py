"""Trust for a repository's own `.codeloop/config.toml`.

A cloned repository is somebody else's input. Its config file could point `base_url` at a
server that collects the user's API key, add hooks that run on the host, turn the sandbox off,
allow every command, or raise the budgets. Until the user trusts that exact file (by content
hash, so an edit needs a new look), its layer may only tighten what the layers below it give.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codeloop.workspace.hostfs import SafeRoot

# Keys an untrusted project may set freely: none of them widens what the agent may do.
_FREE_KEYS = frozenset({"max_output_tokens", "context_window", "request_timeout_s",
                        "max_retries", "verify", "tool_protocol"})
# Most cautious first.
_APPROVAL_ORDER = ("ask", "auto-edit", "full-auto")


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
    data.mkdir(parents=True, exist_ok=True)
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
        kept = _screen_key(key, value, below)
        if kept is None:
            out.ignored.append(key)
            continue
        out.layer[key] = kept
        if key == "permissions" and kept != value:
            out.ignored.append("permissions.allow")
        if key == "budgets" and kept != value:
            out.ignored.extend(f"budgets.{k}" for k in value if k not in kept)
    return out


def _screen_key(key: str, value: Any, below: dict[str, Any]) -> Any:
    if key in _FREE_KEYS:
        return value
    if key == "sandbox":
        return value if value is True else None
    if key == "verify_on_finish":
        return value if value is True else None
    if key == "approval_mode":
        current = below.get("approval_mode", "full-auto")
        if value in _APPROVAL_ORDER and current in _APPROVAL_ORDER \
                and _APPROVAL_ORDER.index(value) <= _APPROVAL_ORDER.index(current):
            return value
        return None
    if key == "permissions" and isinstance(value, dict):
        return {k: v for k, v in value.items() if k != "allow"}
    if key == "budgets" and isinstance(value, dict):
        return _lower_budgets(value, below.get("budgets") or {})
    return None


def _lower_budgets(value: dict[str, Any], current: dict[str, Any]) -> dict[str, Any]:
    """Only limits at or under what is already in force."""
    kept: dict[str, Any] = {}
    for name, limit in value.items():
        ceiling = current.get(name)
        try:
            if ceiling is not None and float(limit) <= float(ceiling):
                kept[name] = limit
        except (TypeError, ValueError):
            kept[name] = limit  # let validation report the bad value
    return kept
