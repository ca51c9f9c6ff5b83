"""Past commits like the task: the files they changed are where the next change often lands.

On the SWE-bench localisation benchmark, searching the messages of the last few thousand
commits with the task's title and voting for the files those commits touched found the gold
file where the text alone did not (recall@5 0.727 with plain change counts, 0.757 with
this); the counts favoured hub files.
"""

from __future__ import annotations

import math
import posixpath
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import bm25s
import numpy as np

from codeloop.index.languages import PROSE_LANGUAGES, detect_language
from codeloop.index.terms import query_terms, terms
from codeloop.workspace.errors import UnsafePath
from codeloop.workspace.hostfs import SafeRoot
from codeloop.workspace.safe_git import GitError, git_text

RECENT_COMMITS = 3000
SIMILAR_COMMITS = 100  # the most similar commits that vote
MAX_COMMIT_FILES = 10  # a commit touching more files is a sweep (rename, reformat): no vote
_GIT_TIMEOUT_S = 20.0


@dataclass(frozen=True)
class Commit:
    message: str
    paths: tuple[str, ...]


def recent_commits(root: Path, commits: int = RECENT_COMMITS) -> list[Commit]:
    """The last `commits` non-merge commits, newest first, with the paths (relative to
    `root`) each touched; empty when `root` is not in a git repository git can read."""
    try:
        # The repository is not trusted: its config may name a signature program
        # (log.showSignature + gpg.program) or a pager; safe_git turns them off.
        proc = git_text(["log", "--no-merges", "--format=%x00%s%n%b%x01", "--name-only",
                         "--relative", f"-n{commits}", "HEAD", "--"], root, check=False,
                        timeout=_GIT_TIMEOUT_S)
    except GitError:
        return []
    # A mirror missing old objects stops the walk part-way with an error after printing the
    # commits it could read: those are still good.
    out = []
    for block in proc.stdout.split("\x00")[1:]:
        message, _, names = block.partition("\x01")
        out.append(Commit(message.strip(), tuple(n for n in names.splitlines() if n)))
    return out


class CommitSearch:
    """BM25 over commit messages, answering with the files similar commits changed."""

    def __init__(self, commits: list[Commit]) -> None:
        # Only code votes: nearly every commit also touches a changelog, which would
        # otherwise head every answer.
        code = (Commit(c.message, tuple(p for p in c.paths if _is_code(p))) for c in commits)
        # A message with no term ("wip", "i") matches nothing; an index of only such
        # messages would have no vocabulary, which BM25 cannot build.
        self._commits = [c for c in code if 0 < len(c.paths) <= MAX_COMMIT_FILES
                         and terms(c.message)]
        self._bm25: bm25s.BM25 | None = None
        if self._commits:
            self._bm25 = bm25s.BM25()
            self._bm25.index([terms(c.message) for c in self._commits], show_progress=False)

    def __len__(self) -> int:
        return len(self._commits)

    def files_for(self, query: str, depth: int = SIMILAR_COMMITS) -> dict[str, float]:
        """Files scored by the similarity of the `depth` best-matching commits that touched
        them; a commit's vote is split over its files (by the square root of their count)."""
        words = list(query_terms(query))
        if self._bm25 is None or not words:
            return {}
        scores = self._bm25.get_scores(words)
        best = np.argsort(-scores, kind="stable")[:depth]
        votes: dict[str, float] = defaultdict(float)
        for i in best:
            score = float(scores[i])
            if score <= 0:
                break
            paths = self._commits[i].paths
            for path in paths:
                votes[path] += score / math.sqrt(len(paths))
        return dict(votes)


def git_head(root: Path) -> str | None:
    """The commit (or ref text) git's HEAD points at, read from files, not a subprocess.

    Read through `SafeRoot`, no link followed. A worktree's `.git` file names its git
    directory elsewhere; that is read the same way, for this opaque key only."""
    try:
        tree, base = SafeRoot(root), ".git/"
        if tree.is_file(".git"):
            target = tree.read_text(".git").strip().removeprefix("gitdir:").strip()
            tree, base = SafeRoot((root / target).resolve()), ""
        head = tree.read_text(base + "HEAD").strip()
        if not head.startswith("ref:"):
            return head
        ref = head[4:].strip()
        if not tree.exists(base + ref) and tree.is_file(base + "commondir"):
            common = tree.read_text(base + "commondir").strip()
            tree, base = SafeRoot((tree.root / base / common).resolve()), ""
        data = tree.read_if_file(base + ref)
        if data is not None:
            return f"{ref}@{data.decode('utf-8', 'replace').strip()}"
        folder = tree.lstat(posixpath.dirname(base + ref))
        return None if folder is None else f"{ref}@{folder.st_mtime_ns}"
    except (OSError, UnsafePath):
        return None


def _is_code(path: str) -> bool:
    return detect_language(path) not in PROSE_LANGUAGES


def title_of(text: str) -> str:
    """The first non-empty line of a task or issue, without markdown heading marks."""
    for line in text.splitlines():
        line = line.strip().lstrip("#").strip()
        if line:
            return line
    return ""
