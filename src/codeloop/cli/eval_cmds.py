"""`codeloop eval swebench`: run SWE-bench instances through the agent and an independent judge."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table
from rich.text import Text

from codeloop.cli.options import RayAddress, Roles, deprecated, roles_flag
from codeloop.cli.safe_text import shown, terminal_console
from codeloop.errors import CodeloopError

if TYPE_CHECKING:
    from codeloop.eval.swebench.evaluate import InstanceResult

console = terminal_console()


def _table(results: list[InstanceResult]) -> Table:
    from codeloop.cli.eval_output import OUTCOME_STYLE
    table = Table(title="SWE-bench", show_lines=False)
    for column in ("instance", "outcome", "steps", "tools", "failed", "agent s", "judge s",
                   "reason"):
        table.add_column(column, overflow="fold")
    for r in results:
        style = OUTCOME_STYLE[r.outcome]
        table.add_row(shown(r.instance_id), Text(r.outcome, style=style), str(r.steps),
                      str(r.tool_calls), str(r.failed_tool_calls), f"{r.agent_s:.1f}",
                      f"{r.judge_s:.1f}", shown(r.reason[:160]))
    return table


def swebench(
    instances: Annotated[Path, typer.Option(
        "--instances", metavar="FILE", help="SWE-bench JSONL file of the instances to run.")],
    mirrors: Annotated[Path, typer.Option(
        "--mirrors", metavar="DIR", help="Directory of bare mirrors laid out as OWNER+NAME/repo.")],
    model: Annotated[str, typer.Option(
        "--model", help="The model: oracle, oracle-perturbed, or PROVIDER:MODEL.")] = "oracle",
    limit: Annotated[int | None, typer.Option(
        "--limit", "-n", metavar="N", help="Run at most N instances.")] = None,
    repo_name: Annotated[list[str] | None, typer.Option(
        "--repo-name", metavar="TEXT",
        help="Only instances whose repository's name contains TEXT (repeatable).")] = None,
    old_repo: Annotated[list[str] | None, typer.Option("--repo", hidden=True)] = None,
    instance: Annotated[list[str] | None, typer.Option(
        "--instance", metavar="ID", help="Only this instance id (repeatable).")] = None,
    env_cache: Annotated[Path | None, typer.Option(
        "--env-cache", metavar="DIR", help="Where the per-(repo, version) virtualenvs are cached "
        "(default $CODELOOP_CACHE_DIR/swebench-envs or ~/.cache/codeloop/swebench-envs).")]
        = None,
    out: Annotated[Path | None, typer.Option(
        "--out", "-o", metavar="FILE",
        help="Append one JSON line per instance; a rerun skips those already recorded.")]
        = None,
    validate_only: Annotated[bool, typer.Option(
        "--validate-only", help="Only build environments and check gold / empty patches.")]
        = False,
    rebuild_envs: Annotated[bool, typer.Option(
        "--rebuild-envs", help="Rebuild environments (and retry recorded failures).")] = False,
    work_dir: Annotated[Path | None, typer.Option(
        "--work-dir", metavar="DIR", help="Scratch directory for checkouts (default: the system temp).")]
        = None,
    trajectories: Annotated[Path | None, typer.Option(
        "--trajectories", metavar="DIR", help="Write each session's trajectory (as `codeloop export` does) "
        "to DIR/INSTANCE.MODEL.json.")] = None,
    as_json: Annotated[bool, typer.Option(
        "--json", help="Print JSON lines; the last is the summary.")]
        = False,
    ray: RayAddress = None,
    workers: Annotated[int, typer.Option(
        "--workers", metavar="N", min=1,
        help="Instances run at once (processes here; Ray tasks with --ray).")] = 1,
    roles: Roles = None,
) -> None:
    """Run SWE-bench instances: build each environment, run the agent, judge its diff."""
    from codeloop.cli.eval_output import option_directory, record_results
    from codeloop.config import load_settings
    from codeloop.eval.local_dispatch import dispatch_local
    from codeloop.eval.scratch import clear_orphans
    from codeloop.eval.suite.run import recorded_ids
    from codeloop.eval.swebench.evaluate import summarize
    from codeloop.eval.swebench.instances import load_instances
    from codeloop.eval.swebench.run import SwebenchRun, environment_of, run_instance
    from codeloop.fleet.eval_dispatch import on_cluster
    if old_repo:
        # `--repo` names a repository's directory everywhere else.
        deprecated("codeloop eval swebench --repo TEXT", "--repo-name TEXT")
        repo_name = [*(repo_name or []), *old_repo]
    insts = load_instances(instances, repos=repo_name, ids=instance, limit=limit)
    if not insts:
        raise CodeloopError("no instance matches the filters",
                            "check --repo-name / --instance")
    for path, option in ((work_dir, "--work-dir"), (trajectories, "--trajectories"),
                         (out.parent if out else None, "--out")):
        if path is not None:
            option_directory(path, option)
    if rebuild_envs and (ray is not None or workers > 1):
        # Every instance would rebuild its environment again: the rebuild is remembered per
        # process, and each instance runs in a process of its own.
        raise CodeloopError("--rebuild-envs cannot be combined with --ray or --workers",
                            "rebuild the environments first with one worker and without "
                            "--ray, then run with them")
    run = SwebenchRun(mirrors, model, load_settings(flags=roles_flag(roles)), env_cache,
                      work_dir, trajectories, rebuild_envs, validate_only)
    evaluation = run.evaluation()
    # Like `eval run`: --out is appended to, and a rerun skips what this model recorded there.
    skip = recorded_ids(out, "gold" if validate_only else evaluation.factory.name)
    todo = [inst for inst in insts if inst.instance_id not in skip]
    if skip and not as_json:
        console.print(f"resuming: {len(skip)} instances already recorded in {shown(out)}")
    records: Iterator[InstanceResult]
    if ray is not None:
        records = on_cluster(ray, run_instance, todo, run,
                             lambda inst: run.blank(inst, evaluation), workers, environment_of)
    elif workers > 1:
        records = dispatch_local(run_instance, todo, run,
                                 lambda inst: run.blank(inst, evaluation), workers, environment_of)
    else:
        records = (run.instance(inst, evaluation) for inst in todo)
    results = record_results(records, out, "a", as_json)
    # What workers killed mid-instance left on this machine, as `eval run` does.
    clear_orphans(work_dir)
    summary = {**summarize(results), "skipped": len(insts) - len(todo)}
    if as_json:
        print(json.dumps(summary), flush=True)
        return
    console.print(_table(results))
    console.print(f"resolved {summary['resolved']}/{summary['resolved'] + summary['not_resolved']}"
                  f" ({summary['resolved_pct']}%), environment unavailable: "
                  f"{summary['env_unavailable']}, skipped (already recorded): {summary['skipped']}")


def register(app: typer.Typer) -> None:
    from codeloop.cli.eval_report_cmds import register_reports
    from codeloop.cli.eval_suite_cmds import register_suite
    eval_app = typer.Typer(help="Evaluate the agent on benchmark suites.", no_args_is_help=True)
    eval_app.command("swebench")(swebench)
    register_suite(eval_app)
    register_reports(eval_app)
    app.add_typer(eval_app, name="eval")
