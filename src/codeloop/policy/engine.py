"""The policy engine: allow / ask / deny for every tool call, and the post-tool pass over
its output. Fails closed: an error while deciding is a deny."""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pathspec
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from codeloop.policy.hook_pins import HookGuard
from codeloop.policy.hooks import HookSpec, run_hooks
from codeloop.policy.network import network_reason
from codeloop.policy.rules import (
    EDIT_TOOLS,
    READ_TOOLS,
    RUN_TOOLS,
    CallTarget,
    PolicyConfigError,
    Rule,
    RuleSet,
    describe_call,
    patch_paths,
)
from codeloop.policy.untrusted import inspect, wrap_untrusted
from codeloop.tools.base import Tier

Action = Literal["allow", "ask", "deny"]
Source = Literal["rules", "hook", "mode", "default", "taint", "tool"]
ApprovalMode = Literal["ask", "auto-edit", "full-auto"]

# "external" (an MCP tool of unknown or destructive effect) asks in every mode: only an
# allow rule (`mcp__git__*`) or a hook lets it run unasked.
_MODE_DEFAULTS: dict[str, dict[str, Action]] = {
    "ask": {"read": "allow", "write": "ask", "execute": "ask", "network": "ask",
            "external": "ask"},
    "auto-edit": {"read": "allow", "write": "allow", "execute": "ask", "network": "ask",
                  "external": "ask"},
    "full-auto": {"read": "allow", "write": "allow", "execute": "allow", "network": "allow",
                  "external": "ask"},
}
_SECRET_FILES = pathspec.GitIgnoreSpec.from_lines([
    ".env", ".env.*", "*.pem", "*.key", "*.p12", "*.pfx", "id_rsa*", "id_dsa*", "id_ecdsa*",
    "id_ed25519*", ".ssh/", ".aws/", ".gnupg/", ".netrc", ".npmrc", ".pypirc",
    ".git-credentials", "credentials", "credentials.*", "secrets", "secrets.*", "*.secret",
    "*.secrets", "*.kdbx",
])
_APPROVAL_DOMAIN = "codeloop-approval-v1\n"
# Tools that only a person's approval runs: no mode, allow rule or hook lets them through.
HUMAN_ONLY_TOOLS = frozenset({"request_network"})
MEMORY_WRITE_TOOLS = frozenset({"remember"})


@dataclass(frozen=True)
class Decision:
    """The engine's answer for one call, with the rule or hook that decided and why."""

    action: Action
    rule: str
    reason: str
    source: Source


@dataclass
class PostToolResult:
    """Tool output (and error) ready for the model: scrubbed, possibly wrapped as untrusted."""

    text: str
    untrusted: bool
    flags: list[str] = field(default_factory=list)
    error: str | None = None


class _Permissions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    allow: list[str] = Field(default_factory=list)
    ask: list[str] = Field(default_factory=list)
    deny: list[str] = Field(default_factory=list)


class _HookConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    event: Literal["pre_tool", "post_tool"]
    matcher: str = "*"
    command: str = Field(min_length=1)
    timeout: float = Field(default=10.0, gt=0, le=600)


class PolicyConfig(BaseModel):
    """The policy part of the configuration, as `config.py` hands it over."""

    model_config = ConfigDict(extra="forbid")
    permissions: _Permissions = Field(default_factory=_Permissions)
    hooks: list[_HookConfig] = Field(default_factory=list)
    approval_mode: ApprovalMode = "ask"


class PolicyEngine:
    """Decides allow/ask/deny: deny rules → pre-hooks → ask rules → allow rules → mode."""

    def __init__(self, rules: RuleSet, hooks: list[HookSpec], mode: ApprovalMode = "ask", *,
                 sandboxed: bool = True) -> None:
        if mode not in _MODE_DEFAULTS:
            raise PolicyConfigError(f"unknown approval mode {mode!r}",
                                    "use one of: ask, auto-edit, full-auto")
        self.rules = rules
        self.hooks = hooks
        self.mode = mode
        self.sandboxed = sandboxed
        # Where hooks run and the files they may run; until bound, a matching hook denies.
        self.hook_guard: HookGuard | None = None

    @classmethod
    def from_config(cls, data: Mapping[str, Any], *, sandboxed: bool = True) -> PolicyEngine:
        """Build from plain config data; a bad rule, hook or mode is a PolicyConfigError."""
        try:
            cfg = PolicyConfig.model_validate(dict(data))
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in exc.errors())
            raise PolicyConfigError(
                f"invalid policy configuration: {problems}",
                "see docs/policy.md for the permissions, hooks and approval_mode keys",
            ) from exc
        lists: dict[str, list[Rule]] = {}
        for kind in ("allow", "ask", "deny"):
            lists[kind] = []
            for i, text in enumerate(getattr(cfg.permissions, kind)):
                try:
                    lists[kind].append(Rule.parse(text))
                except PolicyConfigError as exc:
                    raise PolicyConfigError(f"permissions.{kind}[{i}]: {exc.message}", exc.hint) from exc
        rules = RuleSet(tuple(lists["allow"]), tuple(lists["ask"]), tuple(lists["deny"]))
        hooks = [HookSpec(h.event, h.matcher, h.command, h.timeout) for h in cfg.hooks]
        return cls(rules, hooks, cfg.approval_mode, sandboxed=sandboxed)

    def bind_hooks(self, guard: HookGuard) -> None:
        """Run hooks in `guard.project_dir`, refusing any whose files are not as pinned."""
        self.hook_guard = guard

    def pin_hooks(self, project_dir: Path) -> None:
        """Bind hooks to `project_dir`, pinning their files as they are now (no session)."""
        self.bind_hooks(HookGuard.pin_now((h.command for h in self.hooks), project_dir))

    # -- deciding ------------------------------------------------------------------------

    def decide(self, name: str, tier: Tier, args: dict[str, Any], tainted: bool, cwd: Path,
               session_id: str) -> Decision:
        """Allow, ask or deny this call; any error inside is a deny."""
        try:
            return self._decide(name, tier, args, tainted, cwd, session_id)
        except Exception as exc:  # fail closed: a policy bug must not let a call through
            return Decision("deny", "", f"policy error ({type(exc).__name__}: {exc})", "default")

    def _decide(self, name: str, tier: Tier, args: dict[str, Any], tainted: bool, cwd: Path,
                session_id: str) -> Decision:
        target = describe_call(name, args, cwd)
        rule = self.rules.first_deny(target)
        if rule:
            return Decision("deny", rule.text, f"matches the deny rule {rule.text}", "rules")
        verdict = run_hooks(self.hooks, "pre_tool", name, args, session_id, cwd,
                            guard=self.hook_guard)
        if verdict.action == "deny":
            return Decision("deny", verdict.hook, verdict.reason, "hook")
        if name in HUMAN_ONLY_TOOLS:
            if self.mode == "full-auto":
                return Decision("deny", "", "full-auto mode asks nobody: another host is "
                                "added to [network] allow in the user's config", "mode")
            return Decision("ask", "", "only a person can widen the session's network", "mode")
        if verdict.action == "ask":
            return Decision("ask", verdict.hook, verdict.reason, "hook")
        # A hook's allow stands in for the mode default and the allow rules only: ask rules,
        # unparsable commands and the taint rule still ask.
        if target.problems:
            return Decision("ask", "", "cannot analyse the call: " + "; ".join(target.problems),
                            "rules")
        rule = self.rules.first_ask(target)
        if rule:
            return Decision("ask", rule.text, f"matches the ask rule {rule.text}", "rules")
        floor = self._floor(tier, target, tainted)
        if floor:
            return floor
        if verdict.action == "allow":
            return Decision("allow", verdict.hook, verdict.reason, "hook")
        allowed, refusal = self.rules.allow_match(target)
        if allowed:
            texts = ", ".join(dict.fromkeys(r.text for r in allowed))
            return Decision("allow", texts, f"allowed by {texts}", "rules")
        defaults = _MODE_DEFAULTS[self.mode]
        if tier not in defaults:
            return Decision("ask", "", f"unknown tool tier {tier!r}", "default")
        action = defaults[tier]
        if refusal and action != "allow":  # say why the rule the user wrote did not apply
            return Decision(action, "", refusal, "rules")
        if tier == "external":
            return Decision(action, "", "an MCP tool that does not say it is read-only or "
                            "harmless is asked in every approval mode (an allow rule such as "
                            "mcp__SERVER lets its tools run)", "mode")
        outcome = "are allowed" if action == "allow" else "need approval"
        return Decision(action, "", f"approval mode {self.mode}: {tier} calls {outcome}", "mode")

    def _floor(self, tier: Tier, target: CallTarget, tainted: bool) -> Decision | None:
        """The asks no allow rule or hook can lift."""
        net = "a network tool" if tier == "network" else (
            network_reason(target.shell) if target.shell else None)
        if tainted and net:
            return Decision("ask", "", f"untrusted content is in the context and this call "
                            f"reaches the network ({net})", "taint")
        if tainted and target.name in MEMORY_WRITE_TOOLS:
            # A memory reaches every later session: text the model read cannot put it there.
            return Decision("ask", "", "untrusted content is in the context and this call "
                            "writes long-term memory", "taint")
        if not self.sandboxed and (tier == "execute" or target.name in RUN_TOOLS):
            return Decision("ask", "", "commands run without a sandbox: every command is asked",
                            "mode")
        return None

    def is_path_denied(self, name: str, path: str, cwd: Path) -> bool:
        """Whether a deny rule covers `path` for tool `name` (for tools that walk directories)."""
        return self.rules.first_deny(describe_call(name, {"path": path}, cwd)) is not None

    # -- after the tool ran --------------------------------------------------------------

    def post_tool(self, name: str, args: dict[str, Any], output: str, *, cwd: Path | None = None,
                  session_id: str = "", error: str | None = None) -> PostToolResult:
        """Scrub, scan and run post-hooks; flagged output (and `error`, the tool's error
        message, which may quote repository text too) comes back wrapped as untrusted."""
        try:
            return self._post_tool(name, args, output, error, cwd or Path.cwd(), session_id)
        except Exception as exc:  # fail closed: withhold what we could not check
            withheld = f"[output withheld: the policy check failed ({type(exc).__name__})]"
            return PostToolResult(withheld if output else "", True, ["policy_error"],
                                  withheld if error else error)

    def _post_tool(self, name: str, args: dict[str, Any], output: str, error: str | None,
                   cwd: Path, session_id: str) -> PostToolResult:
        out = inspect(output)
        err = inspect(error, "error ") if error else None
        flags = out.flags + [f for f in (err.flags if err else []) if f not in out.flags]
        if _reads_secret(name, args, cwd):
            flags.append("secret_read")
        text = out.text
        verdict = run_hooks(self.hooks, "post_tool", name, args, session_id, cwd, text,
                            guard=self.hook_guard) if output else None
        if verdict is not None and verdict.action == "deny":
            flags.append("post_hook_blocked")
            text = f"[output withheld by a post-tool hook: {verdict.reason}]"
        elif verdict is not None and verdict.action == "ask":
            flags.append("post_hook_flagged")
        # The user's own hook adds this after any untrusted wrapping: it is not tool output.
        note = f"\n\n[note from a post-tool hook]\n{verdict.context}" \
            if verdict is not None and verdict.context else ""
        error_text = err.text if err else error
        if not flags:
            return PostToolResult(text + note, False, [], error_text)
        if text:
            text = wrap_untrusted(text, flags, out.notes)
        if err is not None and error_text:
            error_text = wrap_untrusted(error_text, flags, err.notes)
        return PostToolResult(text + note, True, flags, error_text)

    # -- approvals -----------------------------------------------------------------------

    @staticmethod
    def approval_digest(name: str, args: dict[str, Any]) -> str:
        return approval_digest(name, args)

    @staticmethod
    def verify_approval(digest: str, name: str, args: dict[str, Any]) -> bool:
        """True only if `digest` was computed over exactly this call."""
        return hmac.compare_digest(digest, approval_digest(name, args))

    @staticmethod
    def remember_rule(name: str, args: dict[str, Any]) -> str:
        return remember_rule(name, args)

    def allow_rule(self, text: str) -> None:
        """Add an allow rule for the rest of the session ("approve and remember")."""
        rule = Rule.parse(text)
        if rule not in self.rules.allow:
            self.rules = dataclasses.replace(self.rules, allow=(*self.rules.allow, rule))


def approval_digest(name: str, args: dict[str, Any]) -> str:
    """sha256 over the canonical JSON of the exact call: an approval binds to these bytes."""
    canonical = json.dumps({"tool": name, "args": args}, sort_keys=True, separators=(",", ":"),
                           ensure_ascii=True, default=_canonical_default)
    return hashlib.sha256((_APPROVAL_DOMAIN + canonical).encode()).hexdigest()


def _canonical_default(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=repr)
    if isinstance(value, bytes):
        return {"bytes": value.hex()}
    raise TypeError(f"cannot fingerprint a {type(value).__name__} argument")


def remember_rule(name: str, args: dict[str, Any]) -> str:
    """The narrowest allow rule that covers this exact call ("approve and remember")."""
    target = describe_call(name, args, Path.cwd())
    if name in RUN_TOOLS and target.shell is not None:
        text = target.command_text
        return "run(" + text.replace("\\", "\\\\").replace("*", "\\*") + ")"
    if name in EDIT_TOOLS or name in READ_TOOLS:
        family = "edit" if name in EDIT_TOOLS else "read"
        raw = _raw_paths(name, args)
        if raw:
            pats = [_glob_escape(p) for p in raw]
            if len(pats) == 1 or any(set(p) & set("{},") for p in pats):
                return f"{family}({pats[0]})"
            return f"{family}(./{{{','.join(p[2:] if p.startswith('./') else p for p in pats)}}})"
    return name


def _raw_paths(name: str, args: dict[str, Any]) -> list[str]:
    out = [v for k in ("path", "file_path", "file", "filename") if isinstance(v := args.get(k), str)]
    if name == "apply_patch":
        for key in ("patch", "diff", "input", "content", "text"):
            if isinstance(v := args.get(key), str):
                out.extend(p for p in patch_paths(v) if p not in out)
    return [os.path.normpath(p) for p in out]


def _glob_escape(path: str) -> str:
    escaped = re.sub(r"([*?\[\]\\!#])", r"\\\1", path)
    if path.startswith("/"):
        return "/" + escaped  # `//abs/path` is an absolute rule path
    return "./" + escaped


def _reads_secret(name: str, args: dict[str, Any], cwd: Path) -> bool:
    target = describe_call(name, args, cwd)
    candidates: list[str] = []
    if target.shell is not None:
        candidates = [a for c in target.shell.commands for a in c.argv[1:] if not a.startswith("-")]
        candidates += target.shell.redirect_targets
    elif name in READ_TOOLS:
        candidates = [_relative(s, target.roots) for ref in target.paths for s in ref.spellings]
    return any(_SECRET_FILES.match_file(c.lstrip("/")) for c in candidates if c)


def _relative(spelling: str, roots: tuple[str, ...]) -> str:
    for root in roots:
        if spelling.startswith(root.rstrip("/") + "/"):
            return spelling[len(root.rstrip("/")) + 1:]
    return spelling
