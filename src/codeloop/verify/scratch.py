"""The verifier's scratch directory in the workspace, made and tidied without following links.

A command in the sandbox can put anything at `.codeloop-verify`: a link there is removed
(the link itself, never its target) before the directory is made, and nothing is read or
written through one.
"""

from __future__ import annotations

import contextlib
import stat

from codeloop.verify.commands import SCRATCH_DIR
from codeloop.workspace.errors import UnsafePath
from codeloop.workspace.hostfs import SafeRoot


def prepare(tree: SafeRoot) -> None:
    """Make the scratch directory; whatever else stands at its name is removed first."""
    st = tree.lstat(SCRATCH_DIR)
    if st is not None and not stat.S_ISDIR(st.st_mode):
        tree.remove(SCRATCH_DIR)
    tree.mkdir(SCRATCH_DIR)


def tidy(tree: SafeRoot) -> None:
    """Remove the scratch directory once nothing is left in it."""
    with contextlib.suppress(OSError, UnsafePath):
        if not tree.scandir(SCRATCH_DIR):
            tree.remove(SCRATCH_DIR)
