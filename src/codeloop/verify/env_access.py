"""Whether the sandbox's uid can read what the project's interpreter needs.

Started as root, commands run as an unprivileged uid with no capabilities: a virtualenv made
with a private umask (0700) cannot be read there, and the tests cannot start. The parents of a
bound directory do not matter (the sandbox makes its own, 0755); the files inside it do.
"""

from __future__ import annotations

import os
import stat
from dataclasses import replace
from pathlib import Path

from codeloop.sandbox.probe import DEFAULT_SANDBOX_UID, probe
from codeloop.verify.python_env import ProjectPython
from codeloop.verify.pyvenv import under_any
from codeloop.workspace.errors import UnsafePath
from codeloop.workspace.hostfs import SafeRoot


def _allowed(st: os.stat_result, as_owner: bool) -> bool:
    need = 0o5 if stat.S_ISDIR(st.st_mode) else 0o4
    bits = (st.st_mode >> 6) & 0o7 if as_owner else st.st_mode & 0o7
    return bits & need == need


def _chain(path: Path, root: Path) -> list[Path]:
    """`path` and its parents up to `root` (inclusive), outermost first."""
    return [p for p in reversed([path, *path.parents]) if under_any(p, [root])]


def unreadable(python: ProjectPython, repo: Path, sandbox_uid: int | None,
               idmapped: bool = False) -> str | None:
    """What the sandbox cannot read of `python`, said so a person can fix it; None when it can.

    `sandbox_uid` is the uid commands run as when codeloop drops from root (None: they run as
    the user); `idmapped`: the workspace looks owned by that uid inside the sandbox.
    """
    repo = Path(os.path.realpath(repo))
    tree = SafeRoot(repo)
    me = os.geteuid()
    for need in python.needs:
        in_repo = under_any(need, [repo])
        root = repo if in_repo else next((b for b in python.binds if under_any(need, [b])), None)
        if root is None:
            continue  # in the system view, or not shown at all (a note says why)
        for path in _chain(need, root):
            try:
                st = tree.lstat(path.relative_to(repo)) if in_repo and path != repo else os.stat(path)
            except (OSError, UnsafePath, ValueError):
                st = None
            if st is None:
                return f"{path} is missing or cannot be read"
            if sandbox_uid is None:
                as_owner = st.st_uid == me
                ok = _allowed(st, as_owner) or (not in_repo and os.access(path, os.R_OK))
            else:
                ok = _allowed(st, st.st_uid == sandbox_uid or (in_repo and idmapped and st.st_uid == me))
            if not ok:
                who = f"uid {sandbox_uid}" if sandbox_uid is not None else "your uid"
                return (f"the sandbox runs commands as {who}, which cannot read {path} "
                        f"(mode {stat.filemode(st.st_mode)}): make it readable with "
                        f"`chmod -R o+rX {root}`, or run codeloop as your own user")
    return None


def with_access_check(python: ProjectPython, repo: Path, sandboxed: bool) -> ProjectPython:
    """`python`, with a `problem` when the sandbox's uid cannot read what it needs."""
    if not sandboxed or python.is_system:
        return python
    caps = probe()
    uid = DEFAULT_SANDBOX_UID if caps.running_as_root else None
    problem = unreadable(python, repo, uid, caps.workspace_idmap.ok)
    return replace(python, problem=problem) if problem else python
