"""The repo map a session starts with: made once from the task text, then recorded."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from codeloop.context.repomap import build_repo_map
from codeloop.errors import CodeloopError
from codeloop.index.service import RepoIndex


def session_repo_map(repo: Path, task: str, budget_tokens: int) -> str:
    """The most relevant signatures of `repo` for `task` within the budget; "" when there is
    nothing to map (no definitions, an empty directory) or the index cannot be built."""
    if budget_tokens <= 0:
        return ""
    try:
        # Its own index object, closed after: the files it leaves in the cache seed the
        # workspace's index, and a long-lived process does not keep a second one in memory.
        index = RepoIndex(repo)
        try:
            index.update()
            result = build_repo_map(index, task, budget_tokens)
        finally:
            index.close()
    except (CodeloopError, OSError, sqlite3.Error):
        # The session still has the search tools; it only starts without the map.
        return ""
    return result.text if result.shown else ""
