"""Where a symlink in a tree leads, judged without ever following it on the host.

`apply` writes a session's links into the user's tree only when they stay inside it: an
absolute target, or a relative one that climbs above the root (lexically, from the link's
directory, or through other links of the tree, such as `b -> .` then `a -> b/..`), leaves.
"""

from __future__ import annotations

import os
import posixpath
import stat

from codeloop.workspace.errors import UnsafePath
from codeloop.workspace.hostfs import SafeRoot

# As the kernel's limit on links followed in one lookup (ELOOP beyond it).
MAX_HOPS = 40


def leaves_lexically(rel: str, target: str) -> bool:
    """Whether the link at `rel` with `target` names a place outside its root as written."""
    if not target or posixpath.isabs(target) or "\x00" in target:
        return True
    depth = len([p for p in posixpath.dirname(rel).split("/") if p])
    for part in target.split("/"):
        if part == "..":
            depth -= 1
            if depth < 0:
                return True
        elif part not in ("", "."):
            depth += 1
    return False


def leaves_tree(tree: SafeRoot, rel: str, target: str) -> bool:
    """Whether following the link at `rel` (with `target`) through the links of `tree`
    would leave the tree: checked lexically, then hop by hop with the tree's own links
    read (never followed). A chain too long to settle counts as leaving."""
    if leaves_lexically(rel, target):
        return True
    done = [p for p in posixpath.dirname(rel).split("/") if p]
    todo = [p for p in target.split("/") if p not in ("", ".")]
    hops = 0
    while todo:
        part = todo.pop(0)
        if part == "..":
            if not done:
                return True
            done.pop()
            continue
        done.append(part)
        st = tree.lstat("/".join(done))
        if st is None or not stat.S_ISLNK(st.st_mode):
            continue  # a directory, a file or nothing: the rest of the path is lexical
        hops += 1
        inner = read_link(tree, "/".join(done))
        if hops > MAX_HOPS or inner is None or posixpath.isabs(inner):
            return True
        done.pop()
        todo[:0] = [p for p in inner.split("/") if p not in ("", ".")]
    return False


def read_link(tree: SafeRoot, rel: str) -> str | None:
    """The target of the link `rel` (its parents reached without links); None if it is not
    a link or cannot be read."""
    parent, _, name = rel.rpartition("/")
    try:
        with tree.open_dir(parent) as pfd:
            return os.readlink(name, dir_fd=pfd)
    except (OSError, UnsafePath):
        return None
