"""`codeloop eval report | compare | gate`: read recorded runs, never re-run them."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from codeloop.cli.safe_text import markup_safe, terminal_console
from codeloop.errors import CodeloopError

if TYPE_CHECKING:
    from codeloop.eval.records import Record

console = terminal_console()
RunArg = Annotated[Path, typer.Argument(metavar="RUN", help="A run's JSONL records (or a directory of them).")]


def report(
    run: RunArg,
    out: Annotated[Path | None, typer.Option(
        "--out", "-o", metavar="DIR", help="Where report.html and report.md go "
        "(default: beside RUN, named after it).")] = None,
    title: Annotated[str | None, typer.Option("--title", help="The page's title.")] = None,
    viewer: Annotated[bool, typer.Option(
        "--viewer/--no-viewer", help="Write each instance's trajectory viewer page into "
        "DIR/trajectories and link it (else link the trajectory files).")] = True,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
) -> None:
    """Write a self-contained HTML report (tables and plots) and a Markdown summary of a run."""
    from codeloop.eval.records import load_run
    from codeloop.eval.report import html_report, markdown_report, summary
    records = load_run(run)
    name = title or run.stem
    target = out or run.parent / f"{run.stem}-report"
    try:
        target.mkdir(parents=True, exist_ok=True)
        links = viewer_pages(records, run, target) if viewer else {}
        (target / "report.html").write_text(html_report(records, name, links), encoding="utf-8")
        (target / "report.md").write_text(markdown_report(records, name), encoding="utf-8")
    except OSError as exc:
        raise CodeloopError(f"--out {target}: cannot write the report ({exc.strerror})",
                            "pass --out a directory you can write to") from exc
    figures = summary(records)
    if as_json:
        print(json.dumps({**figures, "html": str(target / "report.html"),
                          "markdown": str(target / "report.md")}))
        return
    console.print(f"resolved {figures['resolved']}/{figures['judged']} judged "
                  f"({figures['resolved_pct']}%), {figures['not_judged']} not judged")
    console.print(f"wrote {markup_safe(target / 'report.html')} and {markup_safe(target / 'report.md')}")


def _trajectory_of(record: Record, run: Path) -> dict[str, Any] | None:
    """The record's trajectory, its path taken as given or beside the run's records."""
    from codeloop.session.export import TrajectoryError, read_trajectory
    given = Path(record.trajectory)
    base = run if run.is_dir() else run.parent
    for path in (given,) if given.is_absolute() else (given, base / given):
        try:
            return read_trajectory(path)
        except TrajectoryError:
            continue
    return None


def viewer_pages(records: list[Record], run: Path, target: Path) -> dict[str, str]:
    """A viewer page per instance whose trajectory can be read, in `target`/trajectories;
    the links by trajectory, relative to the report, so the report directory can move whole."""
    from codeloop.server.viewer_page import standalone_viewer
    links: dict[str, str] = {}
    used: set[str] = set()
    for record in records:
        doc = _trajectory_of(record, run) if record.trajectory else None
        if doc is None:
            continue
        stem = re.sub(r"[^A-Za-z0-9._-]", "_", record.instance_id)[:120] or "instance"
        name, n = f"{stem}.html", 1
        while name in used:
            n += 1
            name = f"{stem}-{n}.html"
        used.add(name)
        (target / "trajectories").mkdir(exist_ok=True)
        page = standalone_viewer(doc, f"{record.instance_id}: codeloop trajectory")
        (target / "trajectories" / name).write_text(page, encoding="utf-8")
        links[record.trajectory] = f"trajectories/{name}"
    return links


def compare_cmd(
    a: Annotated[Path, typer.Argument(metavar="A", help="The reference run's records.")],
    b: Annotated[Path, typer.Argument(metavar="B", help="The run compared with it.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the comparison as JSON.")] = False,
) -> None:
    """Compare two runs instance by instance: McNemar's test on resolved, bootstrap intervals
    on cost and steps, and the instances that flipped."""
    from codeloop.eval.compare import compare
    from codeloop.eval.records import load_run
    result = compare(load_run(a), load_run(b))
    if as_json:
        print(json.dumps(result.to_json()))
        return
    table = Table(title=f"{markup_safe(a.name)} -> {markup_safe(b.name)} on {result.paired} paired instances")
    for column in ("figure", "A", "B", "B - A (95% interval)"):
        table.add_column(column)
    table.add_row("resolved", str(result.resolved_a), str(result.resolved_b),
                  f"{result.resolved_b - result.resolved_a:+d} (McNemar p = {result.mcnemar_p:.3g})")
    for label, iv in (("cost per instance (USD)", result.cost_diff),
                      ("steps per instance", result.steps_diff)):
        table.add_row(label, "", "", f"{iv.mean:+.4g} [{iv.low:+.4g}, {iv.high:+.4g}]")
    console.print(table)
    verdict = "a real difference" if result.significant else "no significant difference"
    console.print(f"resolved: {verdict} at the 5% level")
    for label, ids in (("now resolved", result.only_b), ("no longer resolved", result.only_a)):
        if ids:
            console.print(f"{label}: " + ", ".join(markup_safe(i) for i in ids))


def gate_cmd(
    run: RunArg,
    baseline: Annotated[Path, typer.Option("--baseline", metavar="RUN",
                                           help="The baseline run's records.")],
    max_resolved_drop: Annotated[int, typer.Option(
        "--max-resolved-drop", metavar="N", help="Resolved instances the run may lose.")] = 0,
    max_cost_rise: Annotated[float, typer.Option(
        "--max-cost-rise", metavar="FRACTION", help="Allowed rise of the mean cost (0.1 = 10%).")]
        = 0.10,
    max_steps_rise: Annotated[float, typer.Option(
        "--max-steps-rise", metavar="FRACTION", help="Allowed rise of the mean steps.")] = 0.10,
    as_json: Annotated[bool, typer.Option("--json", help="Print the verdict as JSON.")] = False,
) -> None:
    """Fail (exit 1) when RUN resolves fewer instances than the baseline or costs or steps rise
    past the thresholds: a regression gate for CI."""
    from codeloop.eval.gate import Thresholds, gate
    from codeloop.eval.records import load_run
    result = gate(load_run(run), load_run(baseline),
                  Thresholds(max_resolved_drop, max_cost_rise, max_steps_rise))
    if as_json:
        print(json.dumps({"passed": result.passed, "failures": result.failures,
                          **result.figures}))
    elif result.passed:
        console.print("gate passed: no regression against the baseline")
    else:
        for failure in result.failures:
            console.print(f"[red]regression:[/red] {markup_safe(failure)}")
    if not result.passed:
        raise typer.Exit(1)


def register_reports(eval_app: typer.Typer) -> None:
    eval_app.command("report")(report)
    eval_app.command("compare")(compare_cmd)
    eval_app.command("gate")(gate_cmd)
