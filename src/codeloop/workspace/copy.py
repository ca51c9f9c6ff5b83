"""A workspace that works on a private copy of the repository.

The fallback where kernel overlays are unavailable: slower to set up (a full copy) but it
keeps the same promise — the user's files do not change until `apply`. Both trees are read
and written through `SafeRoot`, so a link in either is never followed.
"""

from __future__ import annotations

import builtins
import hashlib
import os
import shutil
import stat
from pathlib import Path

from codeloop.workspace import fsops
from codeloop.workspace.base import ApplyResult
from codeloop.workspace.diffing import EXECUTABLE, REGULAR, SYMLINK, file_diff
from codeloop.workspace.errors import UnsafePath, WorkspaceError
from codeloop.workspace.farm import build_farm
from codeloop.workspace.hostfs import SafeRoot
from codeloop.workspace.links import leaves_tree, read_link
from codeloop.workspace.paths import confine

_SKIP_DIRS = {".git"}


def _tree_hashes(tree: SafeRoot) -> dict[str, str]:
    out: dict[str, str] = {}
    for entry in tree.walk(skip_dir=lambda e: e.name in _SKIP_DIRS):
        if entry.is_symlink:
            out[entry.rel] = f"link:{read_link(tree, entry.rel)}"
        elif entry.is_file:
            out[entry.rel] = hashlib.sha256(tree.read_bytes(entry.rel)).hexdigest()
    return out


def _side(tree: SafeRoot, rel: str) -> tuple[bytes | None, int]:
    """(bytes, git mode) of `rel`: a link's target for a link; None when absent."""
    st = tree.lstat(rel)
    if st is None:
        return None, REGULAR
    if stat.S_ISLNK(st.st_mode):
        return os.fsencode(read_link(tree, rel) or ""), SYMLINK
    data = tree.read_if_file(rel)
    return data, EXECUTABLE if st.st_mode & 0o111 else REGULAR


class CopyWorkspace:
    """Copy the repository into `state_dir/tree` once; every read and write goes there."""

    def __init__(self, root: Path, state_dir: Path) -> None:
        self._root = Path(os.path.realpath(root))
        self._state = state_dir
        self._tree = state_dir / "tree"
        if not self._tree.exists():
            state_dir.mkdir(parents=True, exist_ok=True)
            partial = state_dir / "tree.partial"
            shutil.rmtree(partial, ignore_errors=True)
            build_farm(self._root, partial, prefer_copy=True)
            partial.rename(self._tree)
        self._user = SafeRoot(self._root)
        self._copy = SafeRoot(self._tree)

    @property
    def root(self) -> Path:
        return self._root

    @property
    def path(self) -> Path:
        return self._tree

    @property
    def kind(self) -> str:
        return "copy"

    def resolve(self, rel: str) -> Path:
        return confine(self._tree, rel)

    def _rel(self, rel: str) -> str:
        """`rel` confined to the copy, links inside it resolved (never one leading out)."""
        resolved = self.resolve(rel)
        return resolved.relative_to(os.path.realpath(self._tree)).as_posix()

    def read(self, rel: str) -> bytes:
        return self._copy.read_bytes(self._rel(rel))

    def write(self, rel: str, data: bytes) -> None:
        self._copy.write_bytes(self._rel(rel), data)

    def delete(self, rel: str) -> None:
        head, name = os.path.split(rel.rstrip("/"))
        if name in ("", ".", ".."):
            raise WorkspaceError(f"{rel!r} names no file to delete")
        parent = self._rel(head or ".")
        target = f"{parent}/{name}" if parent != "." else name
        if self._copy.is_dir(target):
            raise IsADirectoryError(f"{rel} is a directory")
        if not self._copy.remove(target):
            raise FileNotFoundError(f"{rel} does not exist in the workspace")

    def list(self, rel: str = ".") -> list[str]:
        target = self._rel(rel)
        return [e.name for e in self._copy.scandir("" if target == "." else target)]

    def changed_files(self) -> builtins.list[str]:
        before, after = _tree_hashes(self._user), _tree_hashes(self._copy)
        return sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))

    def diff(self) -> str:
        parts = []
        for rel in self.changed_files():
            (before, old_mode), (after, new_mode) = _side(self._user, rel), _side(self._copy, rel)
            parts.append(file_diff(rel, before, after, old_mode=old_mode, new_mode=new_mode))
        return "".join(parts)

    def apply(self) -> ApplyResult:
        result = ApplyResult()
        for rel in self.changed_files():
            try:
                refusal = self._apply_one(rel)
            except UnsafePath as exc:
                refusal = exc.message
            if refusal:
                result.refused[rel] = refusal
            else:
                result.applied.append(rel)
        return result

    def _apply_one(self, rel: str) -> str:
        """Copy one change into the user's tree; the reason it was refused, or ""."""
        st = self._copy.lstat(rel)
        if st is None:
            if not self._user.is_dir(rel):
                self._user.remove(rel)
            return ""
        if stat.S_ISLNK(st.st_mode):
            target = read_link(self._copy, rel) or ""
            if read_link(self._user, rel) != target and leaves_tree(self._copy, rel, target):
                return f"symlink points outside the repository ({target!r})"
            with self._user.open_dir() as rfd, fsops.parent_fd(rfd, rel, create=True) as (
                    pfd, name):
                fsops.symlink_at(pfd, name, target)
            return ""
        if not stat.S_ISREG(st.st_mode):
            return "device nodes, FIFOs and sockets are never applied"
        self._user.write_bytes(rel, self._copy.read_bytes(rel), mode=stat.S_IMODE(st.st_mode) & 0o777)
        return ""

    def discard(self) -> None:
        shutil.rmtree(self._tree, ignore_errors=True)
