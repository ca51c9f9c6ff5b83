"""`codeloop pr ID`: the pull request's title and body from the session's log, and opening it
with GitHub's `gh` when the user asks."""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from codeloop.errors import CodeloopError
from codeloop.events import BranchCommitted, CommitMessageWritten, Event, VerificationRan
from codeloop.planner.render import render_plan
from codeloop.policy.redact import Redactor
from codeloop.policy.scrub import scrub
from codeloop.session.state import SessionState
from codeloop.workspace.base import FileChange
from codeloop.workspace.safe_git import git_text


class PullRequestError(CodeloopError):
    """The pull request could not be opened (no `gh`, no branch, `gh` failed)."""


@dataclass(frozen=True)
class PullRequest:
    title: str
    body: str
    branch: str | None


def _safe(text: str, redactor: Redactor) -> str:
    return redactor.redact(scrub(text).text).text


def _counts(run: VerificationRan | None) -> str:
    if run is None:
        return "not run"
    if run.could_not_run and not (run.passed or run.failed):
        return "could not run (" + "; ".join(run.could_not_run)[:200] + ")"
    return f"{run.passed} passed, {run.failed} failed"


def _verification(events: list[Event]) -> list[str]:
    runs = [e for e in events if isinstance(e, VerificationRan)]
    before = next((r for r in reversed(runs) if r.phase == "baseline"), None)
    after = next((r for r in reversed(runs) if r.phase == "final"), None) or \
        next((r for r in reversed(runs) if r.phase == "after"), None)
    if before is None and after is None:
        return ["Not verified: the session ran no tests."]
    lines = [f"- before the change: {_counts(before)}", f"- after the change: {_counts(after)}"]
    if after is not None:
        commands = sorted({c for r in runs for c in r.commands})
        if commands:
            lines.append("- commands: " + ", ".join(f"`{c}`" for c in commands))
        for label, names in (("fixed", after.fixed_failures), ("new failures", after.new_failures),
                             ("still failing", after.still_failing)):
            if names:
                lines.append(f"- {label}: " + ", ".join(f"`{n}`" for n in names[:20]))
    return lines


def _changes(changes: list[FileChange], committed: BranchCommitted | None) -> list[str]:
    if changes:
        return [f"- `{c.path}` ({c.status}" + (f" from `{c.old_path}`" if c.old_path else "")
                + ")" for c in changes]
    if committed is not None:
        return [f"- `{rel}`" for rel in committed.files]
    return ["(no changes)"]


def pull_request(state: SessionState, events: list[Event], changes: list[FileChange]
                 ) -> PullRequest:
    """The title and body: task, plan, what changed, how it was verified, what it cost."""
    redactor = Redactor.from_environment()
    task = state.started.task if state.started else ""
    committed = next((e for e in reversed(events) if isinstance(e, BranchCommitted)), None)
    message = next((e for e in reversed(events) if isinstance(e, CommitMessageWritten)), None)
    first = (message.message if message else task).strip().splitlines() or ["codeloop changes"]
    title = first[0].strip()[:72]
    body = ["## Task", "", task.strip(), ""]
    if state.plan is not None:
        body += ["## Plan", "", "```", render_plan(state.plan), "```", ""]
    if state.finished is not None and state.finished.summary:
        body += ["## Summary", "", state.finished.summary.strip(), ""]
    body += ["## What changed", "", *_changes(changes, committed), ""]
    body += ["## How it was verified", "", *_verification(events), ""]
    models = sorted({m for m in (state.started.model,) if m}) if state.started else []
    body += ["## Cost", "", f"${state.cost_usd:.4f} over {state.steps} model call(s), "
             f"{state.total_tokens} tokens" + (f" ({', '.join(models)})" if models else "")
             + ".", "", f"Made by codeloop, session `{state.session_id}`."]
    return PullRequest(_safe(title, redactor), _safe("\n".join(body), redactor) + "\n",
                       committed.branch if committed else None)


def github_slug(repo: Path) -> str:
    """OWNER/NAME of the GitHub repository `origin` points at (read through safe_git)."""
    url = git_text(["config", "--get", "remote.origin.url"], repo, check=False).stdout.strip()
    match = re.search(r"github\.com[:/]([\w.-]+)/([\w.-]+?)(?:\.git)?/?$", url)
    if match is None:
        raise PullRequestError(f"origin ({url or 'not set'}) is not a GitHub repository",
                               "name it with --github-repo OWNER/NAME")
    return f"{match.group(1)}/{match.group(2)}"


def open_pull_request(pr: PullRequest, slug: str, base: str | None = None) -> str:
    """Run `gh pr create` for the hand-off branch; returns what gh printed (the URL).

    gh runs in an empty directory with `--repo`, so it never reads the repository's own git
    config (whose hooks and helpers codeloop does not run)."""
    gh = shutil.which("gh")
    if gh is None:
        raise PullRequestError("`gh` (GitHub's CLI) is not installed",
                               "install it from https://cli.github.com and `gh auth login`, or "
                               "paste the text `codeloop pr ID` prints into GitHub")
    if pr.branch is None:
        raise PullRequestError("the session has no branch to open a pull request from",
                               "`codeloop apply ID --branch NAME --commit`, then push the "
                               "branch, then `codeloop pr ID --open`")
    with tempfile.TemporaryDirectory(prefix="codeloop-pr-") as tmp:
        body = Path(tmp) / "body.md"
        body.write_text(pr.body)
        argv = [gh, "pr", "create", "--repo", slug, "--head", pr.branch, "--title", pr.title,
                "--body-file", str(body)] + (["--base", base] if base else [])
        try:
            proc = subprocess.run(argv, cwd=tmp, capture_output=True, text=True, timeout=120,
                                  check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise PullRequestError(f"gh could not run: {exc}", "check `gh auth status`") from exc
    if proc.returncode != 0:
        raise PullRequestError("gh pr create failed: " + scrub(proc.stderr).text.strip()[-500:],
                               f"push the branch first (`git push -u origin {pr.branch}`) and "
                               "check `gh auth status`")
    return proc.stdout.strip()
