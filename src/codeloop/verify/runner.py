"""Run one verification command in the sandbox and turn what it printed into a `RunResult`."""

from __future__ import annotations

import contextlib
import uuid
from pathlib import Path

from codeloop.sandbox.base import Limits, Sandbox
from codeloop.verify.commands import SCRATCH_DIR, CommandSpec
from codeloop.verify.models import Failure, RunResult
from codeloop.verify.not_run import could_not_run
from codeloop.verify.parsers import PARSERS, parse_generic
from codeloop.verify.parsers.paths import short_trace
from codeloop.verify.scratch import prepare, tidy
from codeloop.workspace.errors import UnsafePath
from codeloop.workspace.hostfs import SafeRoot

# A report bigger than this is not something we can usefully read (or should trust).
_MAX_REPORT_BYTES = 64 * 1024 * 1024


def _read_report(tree: SafeRoot, rel: str) -> str | None:
    """The report the command wrote; None when it is missing, too big or not a plain file
    (a link the command left there is not followed)."""
    try:
        data = tree.read_bytes(rel, _MAX_REPORT_BYTES + 1)
    except (OSError, UnsafePath):
        return None
    return None if len(data) > _MAX_REPORT_BYTES else data.decode("utf-8", "replace")


def _cleanup(tree: SafeRoot, rel: str) -> None:
    with contextlib.suppress(OSError, UnsafePath):
        tree.remove(rel)
    tidy(tree)  # the directory stays while another report is in it


def timeout_failure(name: str, scope: str, why: str = "timed out") -> Failure:
    """The failure a run that did not complete stands for (one per command and scope)."""
    return Failure(kind="timeout", tool=name, message=f"{name} on {scope} {why}")


def run_command(
    spec: CommandSpec,
    sandbox: Sandbox,
    workspace: Path,
    limits: Limits,
    env: dict[str, str] | None = None,
    targets: list[str] | None = None,
    scope: str = "full",
) -> RunResult:
    """Never raises for a failing command: failures, crashes and timeouts are all results."""
    report_rel = f"{SCRATCH_DIR}/{spec.slug}-{uuid.uuid4().hex[:8]}.{spec.report_ext or 'out'}"
    tree = SafeRoot(workspace)
    if spec.report_ext:
        prepare(tree)
    command = spec.render(targets, report_rel)
    try:
        result = sandbox.run(command, workspace, env or None, limits)
        report = _read_report(tree, report_rel) if spec.report_ext else None
    finally:
        if spec.report_ext:
            _cleanup(tree, report_rel)
    parsed = PARSERS[spec.parser](result.output, report, workspace)
    not_run = None if result.timed_out or result.killed_reason else could_not_run(spec, result, parsed, bool(targets))
    if not parsed.structured and result.exit_code not in (0, None):
        parsed = parse_generic(f"{report or ''}\n{result.output}", None, workspace)
    failures = [f if f.tool else f.model_copy(update={"tool": spec.name}) for f in parsed.failures]
    run = RunResult(
        name=spec.name, category=spec.category, command=spec.display(targets), scope=scope,
        exit_code=result.exit_code, duration_ms=result.duration_ms, timed_out=result.timed_out,
        failures=failures, passed=parsed.passed, skipped=parsed.skipped, parser=spec.parser,
        output_tail=short_trace(result.output or report or "", max_lines=40, max_chars=4000),
    )
    if result.timed_out or result.killed_reason:
        why = "timed out" if result.timed_out else f"was stopped ({result.killed_reason})"
        run.failures.append(timeout_failure(spec.name, scope, why))
        run.outcome, run.note = "timeout", f"{why} after {result.duration_ms / 1000:.0f}s"
        return run
    if not_run is not None:
        # Nothing was learned about the tests: no failure to compare, no pass to count.
        run.failures, run.outcome, run.note = [], "not_run", not_run
        return run
    if failures:
        run.outcome = "failed"
        return run
    if result.exit_code == 0:
        return run
    if result.exit_code in spec.usage_exit_codes and (
        not spec.usage_markers or any(m in result.output for m in spec.usage_markers)
    ):
        run.outcome, run.note = "usage", "the command could not run as asked (no tests matched the target?)"
        return run
    run.outcome = "failed"
    run.failures.append(
        Failure(kind="crash", tool=spec.name, trace=short_trace(result.output or report or ""),
                message=f"{spec.name} on {scope} exited with code {result.exit_code} and no failure it could parse")
    )
    return run
