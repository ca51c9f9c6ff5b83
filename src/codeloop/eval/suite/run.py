"""`codeloop eval run`: every task of a suite through a real session and the suite's judge.

Resumable (tasks already in the records file are skipped), parallel (a process per task,
`eval/local_dispatch.py`: each task is independent and the sessions are CPU-bound), and each
task held to its time limit.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from codeloop.config import Settings
from codeloop.config_tables import Budgets
from codeloop.eval.local_dispatch import dispatch_local
from codeloop.eval.metrics import trajectory_metrics
from codeloop.eval.records import load_run
from codeloop.eval.scratch import scratch_dir
from codeloop.eval.suite.judge import judge, judge_command
from codeloop.eval.suite.prepare import checkout
from codeloop.eval.suite.tasks import SuiteTask
from codeloop.eval.swebench.agent import deny_unattended, keep_source_changes
from codeloop.eval.swebench.evaluate import InstanceResult, budget_for, model_factory
from codeloop.eval.swebench.instances import SweInstance
from codeloop.policy.redact import Redactor
from codeloop.sandbox.errors import SandboxUnavailable
from codeloop.session.cleanup import end_run
from codeloop.session.setup import RuntimeParts, build_runner, start_session
from codeloop.session.stores import open_event_store
from codeloop.tools.defaults import default_registry
from codeloop.workspace.hostfs import SafeRoot


@dataclass(frozen=True)
class SuiteRun:
    """What every task of one run shares; picklable, so Ray workers rebuild the rest."""

    model: str
    settings: Settings
    work_dir: Path | None = None


def as_instance(task: SuiteTask) -> SweInstance:
    """The task in the shape the oracle models read (they replay a gold patch)."""
    return SweInstance(instance_id=task.id, repo=task.id, base_commit="", version="",
                       problem_statement=task.task, patch=task.gold_patch, test_patch="",
                       FAIL_TO_PASS=task.FAIL_TO_PASS, PASS_TO_PASS=task.PASS_TO_PASS)


def _reader(repo: Path) -> Callable[[str], str | None]:
    view = SafeRoot(repo)

    def read(rel: str) -> str | None:
        data = view.read_if_file(rel)
        return None if data is None else data.decode("utf-8", "surrogateescape")

    return read


def session_settings(settings: Settings, task: SuiteTask) -> Settings:
    """Unattended, with the task's own test command as the verifier's and its time limit as
    the session's wall-clock budget."""
    verify = {**settings.verify, "test": judge_command(task.model_copy(update={"report": ""})),
              "lint": [], "typecheck": [], "security": []}
    budgets: Budgets = settings.budgets.model_copy(
        update={"wall_clock_s": min(settings.budgets.wall_clock_s, task.time_limit_s)})
    return settings.model_copy(update={"verify": verify, "verify_on_finish": True,
                                       "approval_mode": "full-auto", "budgets": budgets})


def judge_tail(output: str, lines: int = 15, chars: int = 2000) -> str:
    """The end of the judge's output for the record: short, with secrets redacted."""
    tail = "\n".join(output.splitlines()[-lines:])[-chars:]
    return Redactor.from_environment().redact(tail).text


def blank_result(task: SuiteTask, run: SuiteRun) -> InstanceResult:
    """The task's record before anything ran."""
    return InstanceResult(task.id, task.repo or "inline", "", "not_resolved", model=run.model,
                          language=task.language)


def run_task(task: SuiteTask, run: SuiteRun) -> InstanceResult:
    """One task: a checkout, a session on it, the judge on its diff."""
    start = time.monotonic()
    result = blank_result(task, run)
    with scratch_dir(run.work_dir, "suite") as tmp:
        try:
            task.toolchain.require(task.id)
            repo = checkout(task, tmp / "repo")
            diff = _session(task, run, repo, tmp / "session", result)
            if diff is not None and diff.strip():
                # In the task's directory: a task killed while judged leaves one directory.
                verdict = judge(task, diff, work_dir=tmp, sandboxed=run.settings.sandbox)
                result.outcome = "resolved" if verdict.resolved else "not_resolved"
                result.reason, result.judge_s = verdict.reason, verdict.seconds
                result.judge_sandbox = verdict.sandbox
                result.tests_passed, result.tests_failed = len(verdict.passed), len(verdict.failed)
                result.per_test = verdict.per_test
                if not verdict.resolved:
                    result.judge_tail = judge_tail(verdict.output_tail)
            elif diff is not None:
                result.reason = "the session changed nothing"
        except Exception as exc:  # one task's failure is its record, never the whole run's end
            result.outcome, result.reason = "env_unavailable", f"{type(exc).__name__}: {exc}"[:500]
    result.wall_s = round(time.monotonic() - start, 2)
    return result


def _session(task: SuiteTask, run: SuiteRun, repo: Path, state_dir: Path,
             result: InstanceResult) -> str | None:
    factory = model_factory(run.model, run.settings)
    model = factory.make(as_instance(task), _reader(repo))
    settings = budget_for(model, session_settings(run.settings, task))
    state_dir.mkdir(parents=True, mode=0o700)
    store = open_event_store(state_dir)
    sid = start_session(store, task.task, repo, settings, model.name, default_registry())
    parts = RuntimeParts(approver=deny_unattended, toolchain=task.toolchain.sandbox_toolchain())
    try:
        runner = build_runner(store, sid, repo, settings, model, base_dir=state_dir, parts=parts)
    except SandboxUnavailable as exc:
        result.agent_note = f"no sandbox: {exc.message}"
        runner = build_runner(store, sid, repo, settings.model_copy(update={"sandbox": False}),
                              model, base_dir=state_dir, parts=parts)
    agent_start = time.monotonic()
    try:
        state = runner.run()
        diff = keep_source_changes(runner.ctx.workspace.diff(), repo)
        events = store.read(sid)
    finally:
        end_run(runner.ctx)
        store.close()
    result.agent_s = round(time.monotonic() - agent_start, 2)
    result.session_status, result.steps = state.status, state.steps
    result.sandbox = runner.ctx.sandbox.name
    metrics = trajectory_metrics(events)
    result.metrics, result.cost_usd = metrics.to_json(), metrics.cost_usd
    result.tool_calls, result.failed_tool_calls = metrics.tool_calls, metrics.tool_errors
    result.edits = sum(metrics.edits_by_strategy.values())
    finish = metrics.tools.get("finish")
    result.finish_blocked = finish.errors if finish is not None else 0
    result.verify_s = metrics.verification_s
    result.diff_lines = diff.count("\n")
    return diff


def recorded_ids(out: Path | None, model: str) -> set[str]:
    """Tasks a previous run of this model already recorded in `out` (a resumed run skips them)."""
    if out is None or not out.is_file() or out.stat().st_size == 0:
        return set()
    return {r.instance_id for r in load_run(out) if r.model == model}


def pending(tasks: list[SuiteTask], skip: set[str] | None) -> list[SuiteTask]:
    """The tasks a run still has to do."""
    return [t for t in tasks if t.id not in (skip or set())]


def run_suite(tasks: list[SuiteTask], run: SuiteRun, workers: int = 1,
              skip: set[str] | None = None) -> Iterator[InstanceResult]:
    """Each task's record as it completes (in completion order with several workers; a task
    whose process dies is started once more, then recorded with the cause)."""
    todo = pending(tasks, skip)
    if workers <= 1:
        for task in todo:
            yield run_task(task, run)
        return
    yield from dispatch_local(run_task, todo, run, lambda task: blank_result(task, run), workers)
