"""Events of handing a session's work back through git: a commit message, a branch, a PR."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from codeloop.events.base import EventBase


class CommitMessageWritten(EventBase):
    """The message for the session's change set; `digest` names the changes it describes,
    so a later `--commit` of the same changes reuses it instead of asking again."""

    type: Literal["commit_message_written"] = "commit_message_written"
    message: str
    source: Literal["model", "fallback"]
    digest: str
    # Why the fallback was used (no model configured, the call failed).
    reason: str = ""


class BranchCommitted(EventBase):
    """The session's changes became a commit on a new branch; the user's tree was not touched."""

    type: Literal["branch_committed"] = "branch_committed"
    branch: str
    # The branch's head: the last of `commits` (one, or one per plan step).
    commit: str
    base: str
    files: list[str] = Field(default_factory=list)
    commits: list[str] = Field(default_factory=list)


class PullRequestOpened(EventBase):
    type: Literal["pull_request_opened"] = "pull_request_opened"
    branch: str
    url: str = ""
