"""`codeloop verify`: run a repository's tests and checks the way the verifier sees them."""

from __future__ import annotations

import json
import shutil
import uuid
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from codeloop.cli.options import HERE, OldRepoArgument, Repo, chosen_repo
from codeloop.cli.safe_text import shown, terminal_console
from codeloop.errors import ConfigError

if TYPE_CHECKING:
    from codeloop.verify.verification import Verification

console = terminal_console()


def _print(result: Verification, plan_lines: list[str]) -> None:
    for line in plan_lines:
        console.print(shown(line, "dim"))
    table = Table("command", "scope", "result", "exit", "seconds")
    for run in result.runs:
        style = "green" if run.outcome == "passed" else "red"
        table.add_row(shown(run.command), shown(run.scope), shown(run.counts, style),
                      str(run.exit_code),
                      f"{run.duration_ms / 1000:.1f}")
    console.print(table)
    failures = [f for r in result.runs for f in r.failures]
    if failures:
        listing = Table("failing", "kind", "severity")
        for failure in failures[:50]:
            listing.add_row(shown(failure.headline()), shown(failure.kind),
                            shown(failure.severity))
        console.print(listing)
        if len(failures) > 50:
            console.print(f"... and {len(failures) - 50} more (use --json for all)")


def verify_cmd(
    repo: Repo = HERE,
    old_repo: OldRepoArgument = None,
    target: Annotated[str | None, typer.Option("--target", "-t", help="Tests to run (files or ids).")] = None,
    checks: Annotated[bool, typer.Option("--checks/--no-checks", help="Run lint, type and security checks.")] = True,
    plan_only: Annotated[bool, typer.Option("--plan", help="Only show which commands would run.")] = False,
    no_sandbox: Annotated[bool, typer.Option("--no-sandbox", help="Run commands as host processes.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
) -> None:
    """Run the tests and checks codeloop would verify edits with; your files are not changed."""
    from codeloop.config import data_dir, load_settings
    from codeloop.session.setup import command_limits, open_workspace_and_sandbox, project_python
    from codeloop.verify.detect import detect, sandbox_which
    from codeloop.verify.python_env import describe_python
    from codeloop.verify.settings import VerifySettings
    from codeloop.verify.verifier import Verifier
    repo = chosen_repo(repo, old_repo, "`codeloop verify PATH`").resolve()
    if not repo.is_dir():
        raise ConfigError(f"{repo} is not a directory", "pass the repository as --repo PATH")
    settings = load_settings(repo)
    if no_sandbox:
        settings = settings.model_copy(update={"sandbox": False})
    verify = VerifySettings.load(settings.verify)
    state = data_dir() / "verify-runs" / uuid.uuid4().hex[:12]
    try:
        python = project_python(repo, settings)
        workspace, sandbox = open_workspace_and_sandbox(repo, state, settings, python=python)
        plan = detect(workspace.path, verify, sandbox_which(sandbox, workspace.path, verify.env))
        if not checks:
            plan.checks = []
        if plan_only:
            lines = [*plan.describe(), *(f"note: {n}" for n in (describe_python(python) if python else []))]
            if as_json:
                typer.echo(json.dumps({"plan": lines}))
            else:
                for line in lines:
                    console.print(shown(line))
            return
        verifier = Verifier(workspace.path, sandbox, verify, changed_files=workspace.changed_files, plan=plan,
                            python=python, limits=command_limits(settings))
        result = verifier.baseline(target)
    finally:
        shutil.rmtree(state, ignore_errors=True)
    if as_json:
        runs = result.data()["runs"]
        typer.echo(json.dumps({"runs": runs, "passed": result.passed, "failed": result.failed,
                               "could_not_run": result.not_run}))
    else:
        _print(result, verifier.plan.describe())
    if result.failed or result.not_run:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("verify")(verify_cmd)
