"""`codeloop eval run SUITE.jsonl`: a generic suite through the agent and the suite's judge."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from codeloop.cli.options import RayAddress, Roles, roles_flag
from codeloop.cli.safe_text import shown, terminal_console
from codeloop.errors import CodeloopError

console = terminal_console()


def run(
    suite: Annotated[Path, typer.Argument(metavar="SUITE", help="JSONL file, one task per line.")],
    model: Annotated[str, typer.Option(
        "--model", help="The model: oracle, oracle-perturbed, or PROVIDER:MODEL.")] = "oracle",
    out: Annotated[Path | None, typer.Option(
        "--out", "-o", metavar="FILE", help="Append one JSON line per task; tasks already in "
        "it (for this model) are skipped, so a stopped run resumes.")] = None,
    workers: Annotated[int, typer.Option(
        "--workers", metavar="N", min=1,
        help="Tasks run at once (processes here; Ray tasks with --ray).")] = 1,
    ray: RayAddress = None,
    task_id: Annotated[list[str] | None, typer.Option(
        "--task", metavar="ID", help="Only this task (repeatable).")] = None,
    work_dir: Annotated[Path | None, typer.Option(
        "--work-dir", metavar="DIR", help="Scratch directory for checkouts (default: the system temp).")]
        = None,
    as_json: Annotated[bool, typer.Option(
        "--json", help="Print JSON lines; the last is the summary.")] = False,
    roles: Roles = None,
) -> None:
    """Run a generic suite: each task's code, a session on its task, the task's tests as judge."""
    from codeloop.cli.eval_output import option_directory, record_results
    from codeloop.config import load_settings
    from codeloop.eval.scratch import clear_orphans
    from codeloop.eval.suite.run import (
        SuiteRun,
        blank_result,
        pending,
        recorded_ids,
        run_suite,
        run_task,
    )
    from codeloop.eval.suite.tasks import load_suite
    from codeloop.eval.swebench.evaluate import summarize
    from codeloop.fleet.eval_dispatch import on_cluster
    tasks = load_suite(suite)
    if task_id:
        tasks = [t for t in tasks if t.id in set(task_id)]
        if not tasks:
            raise CodeloopError("no task matches --task", "check the ids in the suite file")
    skip = recorded_ids(out, model)
    for path, option in ((out.parent if out else None, "--out"), (work_dir, "--work-dir")):
        if path is not None:
            option_directory(path, option)
    if skip and not as_json:
        console.print(f"resuming: {len(skip)} tasks already recorded in {shown(out)}")
    settings = load_settings(flags=roles_flag(roles))
    spec = SuiteRun(model, settings, work_dir)
    if ray is None:
        records = run_suite(tasks, spec, workers, skip)
    else:
        records = on_cluster(ray, run_task, pending(tasks, skip), spec,
                             lambda task: blank_result(task, spec), workers)
    results = record_results(records, out, "a", as_json)
    # What workers killed mid-task left on this machine (others clear theirs at their next
    # task): no task of this run is running any more.
    clear_orphans(work_dir)
    summary = {**summarize(results), "skipped": len(skip & {t.id for t in tasks})}
    if as_json:
        print(json.dumps(summary), flush=True)
        return
    console.print(f"resolved {summary['resolved']}/{summary['resolved'] + summary['not_resolved']}"
                  f" ({summary['resolved_pct']}%), could not run: {summary['env_unavailable']},"
                  f" skipped (already recorded): {summary['skipped']}")


def register_suite(eval_app: typer.Typer) -> None:
    eval_app.command("run")(run)
