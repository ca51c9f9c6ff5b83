"""Git repositories hidden in a session's changes, which `apply` never writes into the user's tree.

Git takes any directory holding `HEAD` plus `objects`, `refs` or `commondir` for a (bare)
repository, whatever its name, and git run later inside it obeys that directory's `config`
(core.fsmonitor, hooks, pagers: programs run on the host). A file or directory named `.git`
is a repository or a `gitdir:` pointer to one; on a case-insensitive, NTFS or HFS+ tree (a
Windows or macOS checkout, WSL's /mnt/c, a network share) so are `.GIT`, `.git ` and `.git.`,
`.git` with ignorable Unicode in it, and `git~1`. Those names are distinct on this
filesystem, so a sandboxed command can make them; git itself refuses to check them out
(core.protectNTFS, core.protectHFS), so no honest change holds one, and apply refuses all.
"""

from __future__ import annotations

import stat

from codeloop.workspace import fsops
from codeloop.workspace.changes import RawChange

# Code points HFS+ ignores when it compares names (git's is_hfs_dotgit list).
_HFS_IGNORED = dict.fromkeys(map(ord, "\u200c\u200d\u200e\u200f\u202a\u202b\u202c\u202d"
                                      "\u202e\u206a\u206b\u206c\u206d\u206e\u206f\ufeff"))
_REPO_PARTS = ("objects", "refs", "commondir")


def is_git_name(name: str) -> bool:
    """Whether some filesystem a checkout may live on would take `name` for `.git`."""
    folded = name.translate(_HFS_IGNORED).lower()
    if folded.startswith(".git:"):  # an NTFS alternate data stream of .git
        return True
    return folded.rstrip(" .") == ".git" or folded == "git~1"


def git_name_in(rel: str) -> str | None:
    """The first component of `rel` that is a `.git` in some spelling, or None."""
    return next((part for part in rel.split("/") if is_git_name(part)), None)


def _is_repository(merged_fd: int, rel: str) -> bool:
    prefix = rel + "/" if rel else ""
    if fsops.lstat_at(merged_fd, prefix + "HEAD") is None:
        return False
    return any(fsops.lstat_at(merged_fd, prefix + part) is not None for part in _REPO_PARTS)


def embedded_repositories(raw: list[RawChange], merged_fd: int) -> dict[str, str]:
    """Refusal reasons for the changes that would write into a git repository or make one."""
    refused: dict[str, str] = {}
    known: dict[str, bool] = {}
    for ch in raw:
        if ch.after is None:
            continue  # deleting never makes a repository
        name = git_name_in(ch.rel)
        if name is not None:
            refused[ch.rel] = (f"{name!r} is a name git takes for .git on some filesystems; "
                               "repositories and gitdir files are never applied")
            continue
        parts = ch.rel.split("/")
        for depth in range(len(parts)):
            parent = "/".join(parts[:depth])
            if parent not in known:
                st = fsops.lstat_at(merged_fd, parent) if parent else None
                is_dir = parent == "" or (st is not None and stat.S_ISDIR(st.st_mode))
                known[parent] = is_dir and _is_repository(merged_fd, parent)
            if known[parent]:
                where = parent or "the repository root"
                refused[ch.rel] = (f"{where} holds HEAD with objects/refs: git would take it for "
                                   "a repository and obey its config; embedded repositories "
                                   "are never applied")
                break
    return refused
