"""Permission rules, hooks, output scrubbing and injection scanning, and the decision engine."""

from codeloop.policy.engine import (
    ApprovalMode,
    Decision,
    PolicyConfig,
    PolicyEngine,
    PostToolResult,
    approval_digest,
    remember_rule,
)
from codeloop.policy.hooks import HookSpec
from codeloop.policy.rules import PolicyConfigError, Rule, RuleSet

__all__ = [
    "ApprovalMode",
    "Decision",
    "HookSpec",
    "PolicyConfig",
    "PolicyConfigError",
    "PolicyEngine",
    "PostToolResult",
    "Rule",
    "RuleSet",
    "approval_digest",
    "remember_rule",
]
