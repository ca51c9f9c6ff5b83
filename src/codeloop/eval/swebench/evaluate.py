"""`codeloop eval swebench`: each instance through environment, agent and judge, to a result."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from codeloop.config import Settings
from codeloop.errors import CodeloopError
from codeloop.eval.metrics import trajectory_metrics
from codeloop.eval.scratch import scratch_dir
from codeloop.eval.swebench.agent import run_agent
from codeloop.eval.swebench.checkout import apply_patch
from codeloop.eval.swebench.envs import EnvUnavailable, TaskEnv
from codeloop.eval.swebench.harness import NO_FAIL_TO_PASS, Bench
from codeloop.eval.swebench.instances import SweInstance
from codeloop.eval.swebench.oracle import OracleModel
from codeloop.llm.types import Model
from codeloop.session.export import trajectory
from codeloop.session.stores import open_event_store

Outcome = Literal["resolved", "not_resolved", "env_unavailable"]


@dataclass
class InstanceResult:
    instance_id: str
    repo: str
    version: str
    outcome: Outcome
    reason: str = ""
    model: str = ""
    session_status: str = ""
    steps: int = 0
    tool_calls: int = 0
    failed_tool_calls: int = 0
    edits: int = 0
    agent_s: float = 0.0
    judge_s: float = 0.0
    wall_s: float = 0.0
    excluded_tests: list[str] = field(default_factory=list)
    diff_lines: int = 0
    sandbox: str = ""
    judge_sandbox: str = ""
    finish_blocked: int = 0
    verify_s: float = 0.0
    agent_note: str = ""
    # start_session (the index and the task context are built on a thread since issue 19).
    session_start_s: float = 0.0
    # The session's trajectory file (`--trajectories`), for reading what the agent did.
    trajectory: str = ""
    cost_usd: float = 0.0
    language: str = "python"
    # The judge's per-test counts (generic suites), and whether its output gave them.
    tests_passed: int = 0
    tests_failed: int = 0
    per_test: bool = False
    # The judge's last output lines when it did not resolve the task (generic suites),
    # secrets redacted: "the test command exited 1" alone says nothing about why.
    judge_tail: str = ""
    # The trajectory metrics (codeloop.eval.metrics), computed from the session's event log.
    metrics: dict[str, Any] = field(default_factory=dict)
    # On a Ray cluster (`--ray`): the node that ran the instance, and why each earlier attempt
    # was lost (a worker or node that died); empty when it ran in this process.
    node: str = ""
    lost_attempts: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def trajectory_name(instance_id: str, model: str) -> str:
    """`<instance>.<model>.json`, with characters a file name should not hold replaced."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", f"{instance_id}.{model}") + ".json"


def summarize(results: Iterable[InstanceResult]) -> dict[str, Any]:
    """The totals; `resolved_pct` counts only instances whose environment was built."""
    rows = list(results)
    resolved = sum(r.outcome == "resolved" for r in rows)
    not_resolved = sum(r.outcome == "not_resolved" for r in rows)
    judged = resolved + not_resolved
    return {
        "instances": len(rows), "resolved": resolved, "not_resolved": not_resolved,
        "env_unavailable": sum(r.outcome == "env_unavailable" for r in rows),
        "resolved_pct": round(100.0 * resolved / judged, 1) if judged else 0.0,
    }


@dataclass(frozen=True)
class ModelFactory:
    """The model for an instance, made from the instance and a reader of its checkout; `name`
    is known before any is made, so a record without a session still says which model."""

    name: str
    make: Callable[[SweInstance, Callable[[str], str | None]], Model]


def model_factory(spec: str, settings: Settings) -> ModelFactory:
    """`oracle`, `oracle-perturbed`, or a provider model such as `openai:gpt-4o-mini`."""
    if spec in ("oracle", "oracle-perturbed"):
        perturbed = spec == "oracle-perturbed"
        return ModelFactory(spec, lambda inst, read: OracleModel(inst, read, perturbed=perturbed))
    if ":" not in spec:
        raise CodeloopError(f"unknown model {spec!r}",
                            "use oracle, oracle-perturbed or PROVIDER:MODEL")
    from codeloop.llm.factory import make_model

    model = make_model(spec, settings)
    return ModelFactory(model.name, lambda _inst, _read: model)


def budget_for(model: Model, settings: Settings) -> Settings:
    """The oracle's replay makes one call per hunk: a gold patch with more hunks than the step
    budget (sympy-18033: 88 in 14 files) would end `budget_exceeded` for want of steps, which
    says nothing about the pipeline. A real model keeps the budget it was given."""
    if not isinstance(model, OracleModel):
        return settings
    # With roles the replay is one plan step, and its reads come before the plan: neither
    # may stop it for want of a share of the steps.
    roles = settings.roles.model_copy(update={"step_share": 1.0, "planner_share": 1.0})
    if model.steps_needed <= settings.budgets.max_steps:
        return settings.model_copy(update={"roles": roles})
    budgets = settings.budgets.model_copy(update={"max_steps": model.steps_needed})
    return settings.model_copy(update={"budgets": budgets, "roles": roles})


def _reader(repo: Path) -> Callable[[str], str | None]:
    def read(rel: str) -> str | None:
        path = repo / rel
        return path.read_text("utf-8", "surrogateescape") if path.is_file() else None
    return read


class Evaluation:
    """Runs instances one after another with one model and one settings object."""

    def __init__(self, bench: Bench, factory: ModelFactory, settings: Settings,
                 work_dir: Path | None = None, trajectories: Path | None = None) -> None:
        self.bench = bench
        self.factory = factory
        self.settings = settings
        self.work_dir = work_dir
        self.trajectories = trajectories

    def run(self, instances: Iterable[SweInstance]) -> Iterator[InstanceResult]:
        for inst in instances:
            yield self.one(inst)

    def one(self, inst: SweInstance) -> InstanceResult:
        start = time.monotonic()
        base = self.blank(inst)
        env = self._environment(inst, base)
        if env is None:
            return self._done(base, start)
        with env.exclusive():
            check = self.bench.validate(inst, env)
            base.excluded_tests = check.excluded
            if not check.ok:
                base.reason = f"environment check failed: {check.problem}"
                return self._done(base, start)
            self._solve(inst, env, base, frozenset(check.excluded))
        return self._done(base, start)

    def check(self, inst: SweInstance) -> InstanceResult:
        """Only the environment check: "resolved" means the gold patch resolves, empty does not."""
        start = time.monotonic()
        result = self.blank(inst, gold=True)
        env = self._environment(inst, result)
        if env is None:
            return self._done(result, start)
        with env.exclusive():
            check = self.bench.validate(inst, env)
        result.excluded_tests = check.excluded
        if check.ok:
            result.outcome = "resolved"
        else:
            result.reason = f"environment check failed: {check.problem}"
        return self._done(result, start)

    def blank(self, inst: SweInstance, *, gold: bool = False) -> InstanceResult:
        """The instance's record before anything ran (`gold`: of the environment check)."""
        return InstanceResult(inst.instance_id, inst.repo, inst.version, "env_unavailable",
                              model="gold" if gold else self.factory.name)

    def _environment(self, inst: SweInstance, result: InstanceResult) -> TaskEnv | None:
        """The task's environment, or None with the reason in `result`; an instance with
        nothing to judge is settled before any environment is built for it."""
        if not inst.FAIL_TO_PASS:
            result.reason = f"environment check failed: {NO_FAIL_TO_PASS}"
            return None
        try:
            return self.bench.environment(inst)
        except EnvUnavailable as exc:
            result.reason = exc.reason
            return None

    def _solve(self, inst: SweInstance, env: TaskEnv, result: InstanceResult,
               excluded: frozenset[str]) -> None:
        with scratch_dir(self.work_dir, "swe") as tmp, \
                self.bench.agent_checkout(inst, tmp / "repo") as repo:
            diff = self._run_agent(inst, env, result, repo, tmp / "session")
        if diff is None:
            return
        if not diff.strip():
            result.outcome, result.reason = "not_resolved", "the session changed nothing"
            return
        verdict = self.bench.judge(inst, env, diff, excluded)
        result.judge_s, result.judge_sandbox = round(verdict.seconds, 2), verdict.sandbox
        result.outcome = "resolved" if verdict.resolved else "not_resolved"
        result.reason = verdict.reason

    def _run_agent(self, inst: SweInstance, env: TaskEnv, result: InstanceResult, repo: Path,
                   state_dir: Path) -> str | None:
        """Install the project into the checkout, apply the test patch and run the session;
        its diff, or None (with the reason in `result`) when the install fails."""
        prepared = env.prepare(repo)
        if not prepared.ok:
            result.reason = f"installing the project failed: {prepared.tail(3)}"
            return None
        apply_patch(repo, inst.test_patch, "test patch")
        model = self.factory.make(inst, _reader(repo))
        run = run_agent(inst, model, repo, env, state_dir, budget_for(model, self.settings))
        result.session_status = run.status
        result.steps, result.tool_calls = run.steps, run.tool_calls
        result.failed_tool_calls, result.edits = run.failed_tool_calls, run.edits
        result.agent_s, result.session_start_s = round(run.wall_s, 2), round(run.start_s, 2)
        result.sandbox, result.finish_blocked = run.sandbox, run.finish_blocked
        result.verify_s, result.agent_note = round(run.verify_s, 2), run.note
        result.diff_lines = run.diff.count("\n")
        store = open_event_store(state_dir)
        try:
            events = store.read(run.session_id)
            row = store.get(run.session_id)
        finally:
            store.close()
        result.metrics = trajectory_metrics(events, inst.gold_files).to_json()
        result.cost_usd = result.metrics["cost_usd"]
        if self.trajectories is not None:
            doc = trajectory(row, events, run.diff)
            path = self.trajectories / trajectory_name(inst.instance_id, model.name)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
            result.trajectory = str(path)
        return run.diff

    @staticmethod
    def _done(result: InstanceResult, start: float) -> InstanceResult:
        result.wall_s = round(time.monotonic() - start, 2)
        return result
