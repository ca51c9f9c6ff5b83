"""Running a codeloop session on a task checkout and collecting its diff and trajectory."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path

from codeloop.config import Settings
from codeloop.eval.swebench.bytecode import precompile, share_environment_cache
from codeloop.eval.swebench.checkout import git
from codeloop.eval.swebench.envs import (
    REINSTALL_TIMEOUT_S,
    TaskEnv,
)
from codeloop.eval.swebench.instances import SweInstance
from codeloop.eval.swebench.toolchain import reinstall_sandboxed, task_toolchain
from codeloop.events import (
    ApprovalGiven,
    ApprovalRequested,
    FileEdited,
    ToolCallData,
    ToolCallFinished,
    VerificationRan,
)
from codeloop.llm.types import Model
from codeloop.mcp.settings import McpSettings
from codeloop.sandbox.environment import Toolchain
from codeloop.sandbox.errors import SandboxUnavailable
from codeloop.session.cleanup import end_run
from codeloop.session.runner import Runner
from codeloop.session.setup import RuntimeParts, build_runner, session_registry, start_session
from codeloop.session.store import EventStore
from codeloop.session.stores import open_event_store
from codeloop.workspace.base import Workspace

# Files test runs and installs leave behind; never part of a candidate fix.
_GENERATED = re.compile(r"(^|/)(__pycache__|\.pytest_cache|[^/]*\.egg-info|\.tox|\.eggs)(/|$)"
                        r"|\.py[co]$")
_FILE_HEADER = re.compile(r"^diff --git a/(\S+) b/", re.MULTILINE)


@dataclass
class AgentRun:
    session_id: str
    status: str
    diff: str
    steps: int
    tool_calls: int
    failed_tool_calls: int
    edits: int
    wall_s: float
    cost_usd: float
    sandbox: str = ""
    finish_blocked: int = 0
    verify_s: float = 0.0
    note: str = ""
    start_s: float = 0.0  # of wall_s, in start_session


def task_text(inst: SweInstance) -> str:
    return (f"Resolve this issue in the repository ({inst.repo}).\n\n{inst.problem_statement}\n\n"
            "Make the smallest change to the source that fixes it; the tests that check the fix "
            f"are: {', '.join(inst.FAIL_TO_PASS[:10])}")


def keep_source_changes(diff: str, repo: Path) -> str:
    """`diff` without files the repository ignores or that test runs generate."""
    chunks = re.split(r"(?m)^(?=diff --git )", diff)
    kept: list[str] = []
    for chunk in chunks:
        header = _FILE_HEADER.match(chunk)
        if header is None:
            continue
        path = header.group(1)
        if _GENERATED.search(path):
            continue
        if _ignored(path, repo):
            continue
        kept.append(chunk)
    return "".join(kept)


def eval_settings(settings: Settings, inst: SweInstance, env: TaskEnv) -> Settings:
    """The session's settings for one task: its own test command as the verifier's, over the
    test files of FAIL_TO_PASS / PASS_TO_PASS; unattended, so nothing waits for a person, and
    with the built-in tools alone (the user's MCP servers would make runs incomparable)."""
    verify = {
        **settings.verify, "test": env.verifier_test_cmd,
        "baseline_target": " ".join(inst.test_files()) or None,
        # The harness judges by tests alone; the repository's linters are not installed.
        "lint": [], "typecheck": [], "security": [],
    }
    return settings.model_copy(update={"verify": verify, "verify_on_finish": True,
                                       "approval_mode": "full-auto", "mcp": McpSettings()})


def deny_unattended(request: ApprovalRequested, call: ToolCallData) -> ApprovalGiven:
    """No one is there to ask: a call the policy wants approved is refused, never run."""
    return ApprovalGiven(call_id=call.id, approved=False, digest=request.digest,
                         reason="unattended evaluation: calls that need approval are refused",
                         by="unattended")


def _assemble(store: EventStore, sid: str, repo: Path, settings: Settings, model: Model,
              state_dir: Path, toolchain: Toolchain) -> tuple[Runner, str]:
    """The runner as `codeloop run` builds it; without bwrap here, a copy and host processes."""
    parts = RuntimeParts(approver=deny_unattended, toolchain=toolchain)
    try:
        runner = build_runner(store, sid, repo, settings, model, base_dir=state_dir, parts=parts)
        return runner, ""
    except SandboxUnavailable as exc:
        plain = settings.model_copy(update={"sandbox": False})
        runner = build_runner(store, sid, repo, plain, model, base_dir=state_dir, parts=parts)
        return runner, f"no sandbox: {exc.message}"


def install_project(workspace: Workspace, env: TaskEnv, toolchain: Toolchain,
                    sandboxed: bool) -> str:
    """Point the environment's install of the project at the session's workspace; "" or why not.

    Sandboxed, the install writes through the workspace's overlay (never into the user's
    files) and only the virtualenv is writable; unsandboxed the workspace is a private copy.
    """
    if not sandboxed:
        prepared = env.prepare(workspace.path, edits=False)
        return "" if prepared.ok else f"reinstalling the project failed: {prepared.tail(3)}"
    result = reinstall_sandboxed(env, workspace.path, workspace)
    if result is None or result.exit_code == 0:
        return ""
    return f"reinstalling the project failed: {result.output.strip()[-300:]}"


def undo_generated(workspace: Workspace, repo: Path) -> list[str]:
    """Put back the user's copy of ignored files the install regenerated (a version file), so
    the install does not look like an edit to the verifier; returns what still differs."""
    for rel in workspace.changed_files():
        original = repo / rel
        if original.is_file() and _ignored(rel, repo):
            workspace.write(rel, original.read_bytes())
    return workspace.changed_files()


def _ignored(path: str, repo: Path) -> bool:
    return git("check-ignore", "-q", "--no-index", path, cwd=repo, check=False).returncode == 0


def run_agent(inst: SweInstance, model: Model, repo: Path, env: TaskEnv, state_dir: Path,
              settings: Settings) -> AgentRun:
    """Run one session on `repo` (the task checkout) through the same assembly as `codeloop
    run` (overlay workspace, bwrap, policy, verifier gate); return its cleaned diff and metrics."""
    start = time.monotonic()
    state_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    store = open_event_store(state_dir)
    settings = eval_settings(settings, inst, env)
    registry = session_registry(settings)
    session_start = time.monotonic()
    sid = start_session(store, task_text(inst), repo, settings, model.name, registry)
    started = time.monotonic() - session_start
    toolchain = task_toolchain(env, repo)
    pycache = state_dir / "pycache"
    pycache.mkdir(exist_ok=True)
    toolchain.ro_binds.extend([pycache, *share_environment_cache(env, pycache)])
    toolchain.env["PYTHONPYCACHEPREFIX"] = str(pycache)
    runner, fallback = _assemble(store, sid, repo, settings, model, state_dir, toolchain)
    workspace = runner.ctx.workspace
    try:
        precompile(workspace, env, pycache, REINSTALL_TIMEOUT_S)
        notes = [fallback, install_project(workspace, env, toolchain, sandboxed=not fallback)]
        left = undo_generated(workspace, repo)
        if left:
            notes.append("the install changed: " + ", ".join(left[:5]))
        state = runner.run()
    finally:
        end_run(runner.ctx)
    try:
        events = [e.event for e in store.read(sid)]
    finally:
        store.close()  # a PostgreSQL store holds a pool of connections
    calls = [e for e in events if isinstance(e, ToolCallFinished)]
    verified = [e for e in events if isinstance(e, VerificationRan)]
    diff = keep_source_changes(workspace.diff(), repo)
    return AgentRun(
        session_id=sid, status=state.status, diff=diff, steps=state.steps,
        tool_calls=len(calls), failed_tool_calls=sum(1 for c in calls if not c.ok),
        edits=sum(1 for e in events if isinstance(e, FileEdited)),
        wall_s=time.monotonic() - start, cost_usd=state.cost_usd,
        sandbox=runner.ctx.sandbox.name,
        finish_blocked=sum(1 for c in calls if c.name == "finish" and not c.ok),
        verify_s=sum(e.seconds for e in verified), note="; ".join(n for n in notes if n),
        start_s=started,
    )
