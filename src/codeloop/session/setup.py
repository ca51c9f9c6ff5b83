"""Creating a session and assembling everything its runner needs."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from codeloop.config import Settings
from codeloop.context.tokens import get_counter
from codeloop.errors import CodeloopError, ConfigError
from codeloop.events import MemoryRecalled, NetworkHostAllowed, SessionStarted
from codeloop.index.service import RepoIndex
from codeloop.index.warmup import WARMUP_SERVICE, IndexOpener, IndexWarmup
from codeloop.llm.router import Router
from codeloop.llm.types import DeltaCallback, Model
from codeloop.mcp.attach import attach_mcp, detach_mcp
from codeloop.mcp.settings import McpSettings
from codeloop.memory.instructions import (
    InstructionText,
    repository_instructions,
    user_instructions,
)
from codeloop.memory.owners import memory_owner
from codeloop.policy.engine import PolicyEngine
from codeloop.policy.hook_pins import pin_hook_files
from codeloop.sandbox.base import Limits, Sandbox
from codeloop.sandbox.docker_backend import DockerSandbox
from codeloop.sandbox.environment import Toolchain, ToolchainSandbox
from codeloop.sandbox.factory import choose_backend, make_sandbox
from codeloop.session.authorise import Approver
from codeloop.session.context_feed import ContextBudgets, ContextFeed
from codeloop.session.control import Control
from codeloop.session.entry import RepositoryError as RepositoryError
from codeloop.session.entry import check_repo as check_repo
from codeloop.session.entry import open_store as open_store
from codeloop.session.entry import session_dir as session_dir
from codeloop.session.explore import ExploreTool
from codeloop.session.finish_gate import FinishGate
from codeloop.session.memory import attach_memory, task_recall
from codeloop.session.network import NETWORK, SessionNetwork, network_active
from codeloop.session.prompts import system_prompt
from codeloop.session.redaction import session_redactor as session_redactor
from codeloop.session.review import ReviewTool
from codeloop.session.runner import Runner
from codeloop.session.store import EventStore
from codeloop.session.verification import VerifierGate
from codeloop.tools.base import ToolContext
from codeloop.tools.defaults import default_registry
from codeloop.tools.memory_tools import MEMORY_TOOLS
from codeloop.tools.registry import ToolRegistry
from codeloop.tools.visibility import READ_DENIED
from codeloop.verify.env_access import with_access_check
from codeloop.verify.python_env import PROJECT_PYTHON, ProjectPython, find_python, project_toolchain
from codeloop.verify.settings import VerifySettings
from codeloop.workspace.base import LayeredWorkspace
from codeloop.workspace.factory import open_workspace
from codeloop.workspace.safe_git import GitError, git_text


def command_limits(settings: Settings) -> Limits:
    """The limits of each sandboxed command: `[limits]` over the sandbox's defaults."""
    return replace(Limits(timeout_s=settings.budgets.command_timeout_s), **settings.limits.given())


def git_head(repo: Path) -> str | None:
    try:
        proc = git_text(["rev-parse", "HEAD"], repo, check=False)
    except GitError:
        return None
    return proc.stdout.strip() if proc.returncode == 0 else None


def new_session_id() -> str:
    return uuid.uuid4().hex[:12]


def public_settings(settings: Settings) -> dict[str, Any]:
    """The settings as recorded in the log: never the key, nor the MCP servers (their `env`
    and `headers` hold tokens; which servers connected is recorded by their own events)."""
    return settings.model_dump(mode="json", exclude={"api_key", "mcp"})


def session_registry(settings: Settings, network: bool = False) -> ToolRegistry:
    """The tools a session offers: the defaults (with `request_network` when the proxy
    runs), `remember` and `recall` unless memory is off, and with roles the reviewer's
    verdict and the coder's explorers."""
    registry = default_registry(network=network)
    if settings.memory.enabled:
        for tool in MEMORY_TOOLS:
            registry.add(tool())
    if settings.roles.enabled:
        registry.add(ReviewTool())
        registry.add(ExploreTool())
    return registry


def instructions_for(repo: Path) -> list[InstructionText]:
    """The user's own instructions (trusted), then the repository's AGENTS.md files."""
    own = user_instructions()
    return [*([own] if own else []), *repository_instructions(repo)]


def start_session(
    store: EventStore, task: str, repo: Path, settings: Settings, model_name: str,
    registry: ToolRegistry | None = None, owner: str = "local", session_id: str | None = None,
) -> str:
    """Create a session and append its start event; returns the session id."""
    if not task.strip():
        raise CodeloopError("the task is empty", "say what you want done, in quotes")
    repo = check_repo(repo)
    network = network_active(settings)
    registry = registry or session_registry(settings, network)
    # Hooks run the user's files as they are now, never a later version (SECURITY.md 41).
    hook_files = pin_hook_files((h.command for h in make_policy(settings).hooks), repo)
    sid = session_id or new_session_id()
    recalled = task_recall(store, settings, memory_owner(owner), repo, task)
    prompt = system_prompt(instructions_for(repo), session_redactor(settings),
                           settings.network.allow if network else None, recalled.memories)
    store.create(sid, owner=owner)
    store.append(sid, [SessionStarted(
        task=task, repo=str(repo), model=model_name, config=public_settings(settings),
        system_prompt=prompt.text, instructions=prompt.sources,
        tools=[{"name": s.name, "description": s.description, "parameters": s.parameters}
               for s in registry.specs()],
        base_commit=git_head(repo),
        hook_files=hook_files,
    ), *([MemoryRecalled(ids=recalled.ids, query=task, tokens=recalled.tokens)]
         if recalled.ids else [])])
    return sid


def project_python(repo: Path, settings: Settings) -> ProjectPython | None:
    """The project's interpreter for the session's commands (see `python_env`); None under
    Docker, whose image brings its own."""
    if settings.sandbox and choose_backend(settings.sandbox_backend) == "docker":
        return None
    try:
        verify = VerifySettings.load(settings.verify)
    except ConfigError:
        verify = VerifySettings()  # the verifier reports the bad settings when it starts
    return with_access_check(find_python(repo, verify), repo, sandboxed=settings.sandbox)


def open_workspace_and_sandbox(repo: Path, state: Path, settings: Settings,
                               toolchain: Toolchain | None = None,
                               python: ProjectPython | None = None,
                               network: SessionNetwork | None = None,
                               ) -> tuple[LayeredWorkspace, Sandbox]:
    """The session's workspace and the sandbox its commands run in, paired safely.

    Without a sandbox, commands run as host processes that may write files in place, so the
    workspace must be a private copy rather than hard links to the user's files. A
    `toolchain` (e.g. a task's virtualenv), or else the project's interpreter (`python`), is
    made visible to and found first by commands. `network`'s proxy is the bwrap sandbox's
    only way out; without it (and under Docker) commands have no network.
    """
    sandbox: Sandbox
    if settings.sandbox and choose_backend(settings.sandbox_backend) == "docker":
        workspace = open_workspace(repo, state / "workspace", prefer="copy")
        sandbox = DockerSandbox(workspace, settings.docker_image)
        toolchain = None
    elif settings.sandbox:
        workspace = open_workspace(repo, state / "workspace")
        if toolchain is None and python is not None:
            toolchain = project_toolchain(python, repo, workspace.path)
        sandbox = make_sandbox(False, workspace, ro_binds=toolchain.ro_binds if toolchain else (),
                               links=toolchain.links if toolchain else None,
                               egress=network.proxy if network else None)
    else:
        workspace = open_workspace(repo, state / "workspace", prefer="copy")
        if toolchain is None and python is not None:
            toolchain = project_toolchain(python, repo, None)
        sandbox = make_sandbox(True, workspace)
    return workspace, ToolchainSandbox(sandbox, toolchain) if toolchain else sandbox


def network_for(store: EventStore, session_id: str, settings: Settings) -> SessionNetwork | None:
    """The session's egress proxy when its config turns the network on and commands run
    under bwrap (the hosts the user allowed earlier in the session included)."""
    if not network_active(settings):
        return None
    added = [e.event.entry for e in store.read(session_id)
             if isinstance(e.event, NetworkHostAllowed)]
    return SessionNetwork(settings.network, added)


def make_policy(settings: Settings) -> PolicyEngine:
    return PolicyEngine.from_config(
        {"permissions": settings.permissions, "hooks": settings.hooks,
         "approval_mode": settings.approval_mode},
        sandboxed=settings.sandbox,
    )


def read_denied_check(policy: PolicyEngine, root: Path) -> Callable[[str], bool]:
    """For tools that walk many files: whether a deny rule covers reading this path."""
    return lambda rel: policy.is_path_denied("read_file", rel, root)


@dataclass
class RuntimeParts:
    """The optional collaborators a runner can be given."""

    policy: PolicyEngine | None = None
    approver: Approver | None = None
    finish_gate: FinishGate | None = None
    control: Control | None = None
    toolchain: Toolchain | None = None
    # The MCP servers to start (None: the settings' own, which come from the user's config).
    mcp: McpSettings | None = None
    # How the session's index is opened on its thread (tests slow it down).
    index_opener: IndexOpener | None = None


def build_runner(
    store: EventStore, session_id: str, repo: Path, settings: Settings, model: Model,
    base_dir: Path | None = None, parts: RuntimeParts | None = None,
    on_event: Any = None, on_delta: DeltaCallback | None = None,
    registry: ToolRegistry | None = None, summariser: Model | None = None,
    router: Router | None = None,
) -> Runner:
    """The runner for a session; `router` sends each call to its role's model (without one,
    every call goes to `model` and compaction summaries to `summariser`)."""
    parts = parts or RuntimeParts()
    python = project_python(repo, settings) if parts.toolchain is None else None
    network = network_for(store, session_id, settings)
    workspace, sandbox = open_workspace_and_sandbox(repo, session_dir(session_id, base_dir),
                                                    settings, parts.toolchain, python, network)
    limits = command_limits(settings)
    policy = parts.policy or make_policy(settings)
    ctx = ToolContext(workspace=workspace, sandbox=sandbox, limits=limits,
                      services={"verify_config": settings.verify, PROJECT_PYTHON: python,
                                READ_DENIED: read_denied_check(policy, workspace.path),
                                **({NETWORK: network} if network else {})})
    gate = parts.finish_gate
    if gate is None and settings.verify_on_finish:
        gate = VerifierGate(ctx)
    feed = context_feed(store, session_id, repo, settings, ctx, parts.index_opener)
    on_event = attach_memory(ctx, store, session_id, repo, settings, session_redactor(settings),
                             on_event)
    runner = Runner(
        store, session_id, model, registry or session_registry(settings, network is not None),
        ctx, settings.budgets,
        policy=policy, approver=parts.approver, finish_gate=gate,
        on_event=on_event, on_delta=on_delta, control=parts.control,
        max_output_tokens=settings.max_output_tokens,
        context_window=settings.context_window, summariser=summariser or model,
        plan_approval=settings.plans_need_approval, redactor=session_redactor(settings),
        router=router, context=feed, roles=settings.roles,
    )
    # After the runner: connecting records events through it. The caller's `end_run`
    # stops the servers; if the runner is never handed back, stop them here.
    try:
        attach_mcp(parts.mcp if parts.mcp is not None else settings.mcp, runner.registry, ctx)
    except BaseException:
        detach_mcp(ctx)
        raise
    return runner


def context_feed(store: EventStore, session_id: str, repo: Path, settings: Settings,
                 ctx: ToolContext, opener: IndexOpener | None = None) -> ContextFeed:
    """Start the session's index on its thread (the search tools find it in `ctx`) and the
    feed that turns it into code context for the model."""
    started = next((e.event for e in store.read(session_id)
                    if isinstance(e.event, SessionStarted)), None)
    budgets = ContextBudgets.for_window(settings.context_window, settings.max_output_tokens,
                                        settings.context_tokens, settings.repo_map_tokens)
    feed: ContextFeed | None = None

    def opened(index: RepoIndex) -> None:
        ctx.services["index"] = index  # edits are indexed as they happen from here on
        if feed is not None:
            feed.prepare(index)

    warmup = IndexWarmup(ctx.workspace.path, repo, opener, then=opened)
    feed = ContextFeed(warmup, started.task if started else "", budgets,
                       session_redactor(settings), settings.context_wait_s)
    ctx.services[WARMUP_SERVICE] = warmup
    warmup.start()
    # The first request is measured in tokens: its encoding loads (a second of CPU) while
    # the loop gets ready, not when the first model call is due.
    # Not a daemon: a process that ends while the (C++) encoding loads aborted in its exit
    # ("terminate called without an active exception"); it waits the second out instead.
    threading.Thread(target=get_counter, name="codeloop-tokens").start()
    return feed
