"""`run_tests` and `run_checks`: the verifier's results handed to the model as structured data."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field

from codeloop.events import BaselineRecorded
from codeloop.index.service import RepoIndex
from codeloop.tools.base import Observation, Tier, Tool, ToolArgs, ToolContext
from codeloop.verify.gate import GateDecision, could_not_run_text
from codeloop.verify.models import RunResult
from codeloop.verify.pristine import Originals
from codeloop.verify.python_env import PROJECT_PYTHON, ProjectPython
from codeloop.verify.verification import Verification
from codeloop.verify.verifier import Verifier
from codeloop.workspace.base import Workspace
from codeloop.workspace.hostfs import SafeRoot


def _originals(workspace: Workspace) -> Originals:
    """Read a file from the user's repository, which the session has not changed."""

    tree = SafeRoot(workspace.root)

    def read(rel: str) -> bytes | None:
        try:
            return tree.read_if_file(rel)  # a link in the user's tree reads as absent
        except OSError:
            return None

    return read


def get_verifier(ctx: ToolContext) -> Verifier:
    """The session's verifier from `ctx.services`, made (and kept there) on first use.

    It reads `verify_config` (the verify settings dict) and, when present, `index` (the
    session's `RepoIndex`, whose file graph widens the related tests) and the project's
    interpreter (`PROJECT_PYTHON`) from the services.
    """
    verifier = ctx.services.get("verifier")
    if not isinstance(verifier, Verifier):
        index = ctx.services.get("index")
        verifier = Verifier(
            ctx.root, ctx.sandbox, ctx.services.get("verify_config"), changed_files=ctx.workspace.changed_files,
            graph=index.graph if isinstance(index, RepoIndex) else None, originals=_originals(ctx.workspace),
            python=python if isinstance(python := ctx.services.get(PROJECT_PYTHON), ProjectPython) else None,
            limits=ctx.limits,
        )
        ctx.services["verifier"] = verifier
    return verifier


def _report(ctx: ToolContext, result: Verification) -> None:
    """Log what ran, and the runs on the untouched tree in full so a resume keeps them."""
    pristine = get_verifier(ctx).take_pristine()
    if pristine:
        ctx.emit(BaselineRecorded(runs=[r.model_dump(exclude={"output_tail"}) for r in pristine]))
    ctx.emit(result.event())


def restore_baseline(ctx: ToolContext, runs: list[dict[str, Any]]) -> None:
    """Give a resumed session's verifier the baseline its log recorded."""
    if runs:
        get_verifier(ctx).restore_baseline([RunResult.model_validate(r) for r in runs])


def ensure_baseline(ctx: ToolContext) -> Verification | None:
    """Take the baseline once, before the first edit; the loop calls this ahead of write tools."""
    verifier = get_verifier(ctx)
    if verifier.baseline_taken:
        return None
    result = verifier.baseline()
    _report(ctx, result)
    return result


def gate_finish(ctx: ToolContext) -> GateDecision:
    """The finish gate for the loop: verify what the edits have not been verified on, decide.

    On `allow` the session may end (`Verifier.summary()` says what was verified); otherwise
    the message goes back to the model, or — with `escalate` — to a human (`needs_human`
    when unattended).
    """
    decision, ran = get_verifier(ctx).check_finish()
    if ran is not None:
        _report(ctx, ran)
    return decision


def _observe(result: Verification, ctx: ToolContext) -> Observation:
    _report(ctx, result)
    # Failing tests are a result, not a tool error; running nothing at all is one, and so is
    # a run that could not run a single test.
    ran = [r for r in result.runs if r.outcome != "not_run"]
    error = None if ran else ("nothing to run: " + "; ".join(result.notes) if not result.runs
                              else could_not_run_text(result.not_run))
    return Observation(
        ok=error is None,
        output=result.text(),
        error=error,
        data=result.data(),
        # Test output echoes repository content the model did not write.
        untrusted=True,
    )


class RunTestsArgs(ToolArgs):
    target: str | None = Field(
        default=None,
        description=(
            "What to run: a test file, directory or test id (e.g. tests/test_x.py::test_y), "
            "several separated by spaces. Omit to run the tests related to your changes, "
            "then the wider suite."
        ),
    )


class RunTests(Tool):
    name: ClassVar[str] = "run_tests"
    description: ClassVar[str] = (
        "Run the project's tests in the sandbox. Returns pass/fail counts and each failure "
        "(file, line, test id, message, short trace), marked new if it was not failing before your edits."
    )
    args_model: ClassVar[type[ToolArgs]] = RunTestsArgs
    tier: ClassVar[Tier] = "execute"

    def run(self, args: RunTestsArgs, ctx: ToolContext) -> Observation:
        return _observe(get_verifier(ctx).run_tests(args.target), ctx)


class RunChecksArgs(ToolArgs):
    pass


class RunChecks(Tool):
    name: ClassVar[str] = "run_checks"
    description: ClassVar[str] = (
        "Run the project's linters, type checker and security scanner in the sandbox. Returns "
        "each finding (file, line, rule, message), marked new if it was not there before your edits."
    )
    args_model: ClassVar[type[ToolArgs]] = RunChecksArgs
    tier: ClassVar[Tier] = "execute"

    def run(self, args: RunChecksArgs, ctx: ToolContext) -> Observation:
        return _observe(get_verifier(ctx).run_checks(), ctx)
