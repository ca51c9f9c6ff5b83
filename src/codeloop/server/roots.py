"""Which repositories a server may open: only those whose real path lies inside one of its
allowed roots. Clients name paths on the server's disk; without this a token holder could
open a session on any directory the server can read, and apply changes into it."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from codeloop.errors import CodeloopError


class RepoNotAllowed(CodeloopError):
    """The repository path is outside the server's allowed roots (HTTP 403)."""


def real_roots(roots: Sequence[str | Path]) -> tuple[Path, ...]:
    """The roots as absolute real paths (`~` expanded, symlinks resolved), each once."""
    return tuple(dict.fromkeys(Path(os.path.realpath(os.path.expanduser(str(r)))) for r in roots))


def allowed_repo(repo: str | Path, roots: Sequence[Path]) -> Path:
    """The repository's real path if it lies inside one of `roots`; else RepoNotAllowed.

    The one check every path a request names or a session uses goes through: a tenant
    model can feed it per-user roots. The path is resolved (symlinks and `..`) before the
    comparison, and callers use the resolved path from then on, so a link swapped in later
    is not followed through this answer."""
    text = str(repo)
    shown = ", ".join(str(r) for r in roots) or "(none)"
    hint = ("the server's operator can add a root with `codeloop serve --allow-root PATH` "
            "or `[server] allowed_roots` in the config")
    if "\x00" in text or not os.path.isabs(text):
        raise RepoNotAllowed(f"repository path {text!r} is not absolute; give the full path "
                             f"inside one of the allowed roots: {shown}", hint)
    real = Path(os.path.realpath(text))
    for root in real_roots(roots):
        if real == root or real.is_relative_to(root):
            return real
    raise RepoNotAllowed(f"repository {text} is outside the server's allowed roots: {shown}",
                         hint)
