"""Permission rules, hooks, output scrubbing and injection scanning, and the decision engine."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from codeloop.policy.engine import ApprovalMode as ApprovalMode
    from codeloop.policy.engine import Decision as Decision
    from codeloop.policy.engine import PolicyConfig as PolicyConfig
    from codeloop.policy.engine import PolicyEngine as PolicyEngine
    from codeloop.policy.engine import PostToolResult as PostToolResult
    from codeloop.policy.engine import approval_digest as approval_digest
    from codeloop.policy.engine import remember_rule as remember_rule
    from codeloop.policy.hooks import HookSpec as HookSpec
    from codeloop.policy.rules import PolicyConfigError as PolicyConfigError
    from codeloop.policy.rules import Rule as Rule
    from codeloop.policy.rules import RuleSet as RuleSet

# Importing a submodule (the terminal scrubber, say) runs this file first: the engine and
# everything it pulls in load only when one of these names is asked for.
_HOMES = {
    "ApprovalMode": "engine",
    "Decision": "engine",
    "PolicyConfig": "engine",
    "PolicyEngine": "engine",
    "PostToolResult": "engine",
    "approval_digest": "engine",
    "remember_rule": "engine",
    "HookSpec": "hooks",
    "PolicyConfigError": "rules",
    "Rule": "rules",
    "RuleSet": "rules",
}

__all__ = sorted(_HOMES)


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)
