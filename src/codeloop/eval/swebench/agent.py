"""Running a codeloop session on a task checkout and collecting its diff and trajectory."""

from __future__ import annotations

import re
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from codeloop.config import Settings
from codeloop.eval.swebench.checkout import SAFE_GIT
from codeloop.eval.swebench.envs import TaskEnv
from codeloop.eval.swebench.instances import SweInstance
from codeloop.events import FileEdited, ToolCallFinished
from codeloop.llm.types import Model
from codeloop.sandbox.base import CommandResult, Limits, Sandbox
from codeloop.sandbox.environment import BASE_PATH
from codeloop.sandbox.subprocess_backend import SubprocessSandbox
from codeloop.session.runner import Runner
from codeloop.session.setup import start_session
from codeloop.session.store import SQLiteEventStore
from codeloop.tools.base import ToolContext
from codeloop.tools.defaults import default_registry
from codeloop.workspace.copy import CopyWorkspace

# Files test runs and installs leave behind; never part of a candidate fix.
_GENERATED = re.compile(r"(^|/)(__pycache__|\.pytest_cache|[^/]*\.egg-info|\.tox|\.eggs)(/|$)"
                        r"|\.py[co]$")
_FILE_HEADER = re.compile(r"^diff --git a/(\S+) b/", re.MULTILINE)


class VenvSandbox:
    """A sandbox whose commands find the task environment's `python`, `pytest`, ... first."""

    def __init__(self, inner: Sandbox, env: TaskEnv) -> None:
        self.inner = inner
        self.env = env
        self.name = f"{inner.name}+venv"

    def run(self, command: str, cwd: Path, env: dict[str, str] | None = None,
            limits: Limits | None = None) -> CommandResult:
        merged = dict(env or {})
        merged["PATH"] = f"{self.env.bin_dir}:{merged.get('PATH', BASE_PATH)}"
        merged["VIRTUAL_ENV"] = str(self.env.bin_dir.parent)
        return self.inner.run(command, cwd, merged, limits)


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
        ignored = subprocess.run([*SAFE_GIT, "check-ignore", "-q", "--no-index", path],
                                 cwd=repo, capture_output=True, check=False)
        if ignored.returncode == 0:
            continue
        kept.append(chunk)
    return "".join(kept)


def run_agent(inst: SweInstance, model: Model, repo: Path, env: TaskEnv, state_dir: Path,
              settings: Settings) -> AgentRun:
    """Run one session on `repo` (the task checkout) and return its cleaned diff and metrics."""
    start = time.monotonic()
    state_dir.mkdir(parents=True, exist_ok=True)
    store = SQLiteEventStore(state_dir / "events.sqlite")
    registry = default_registry()
    sid = start_session(store, task_text(inst), repo, settings, model.name, registry)
    workspace = CopyWorkspace(repo, state_dir / "workspace")
    ctx = ToolContext(workspace=workspace, sandbox=VenvSandbox(SubprocessSandbox(), env),
                      limits=Limits(timeout_s=settings.budgets.command_timeout_s))
    runner = Runner(store, sid, model, registry, ctx, settings.budgets,
                    max_output_tokens=settings.max_output_tokens)
    state = runner.run()
    events = [e.event for e in store.read(sid)]
    calls = [e for e in events if isinstance(e, ToolCallFinished)]
    diff = keep_source_changes(workspace.diff(), repo)
    return AgentRun(
        session_id=sid, status=state.status, diff=diff, steps=state.steps,
        tool_calls=len(calls), failed_tool_calls=sum(1 for c in calls if not c.ok),
        edits=sum(1 for e in events if isinstance(e, FileEdited)),
        wall_s=time.monotonic() - start, cost_usd=state.cost_usd,
    )
