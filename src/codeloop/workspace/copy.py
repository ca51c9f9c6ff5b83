"""A workspace that works on a private copy of the repository.

The fallback where kernel overlays are unavailable: slower to set up (a full copy) but it
keeps the same promise — the user's files do not change until `apply`.
"""

from __future__ import annotations

import builtins
import hashlib
import os
import shutil
from pathlib import Path

from codeloop.workspace.base import ApplyResult
from codeloop.workspace.diffing import file_diff
from codeloop.workspace.paths import confine

_SKIP_DIRS = {".git"}


def _tree_hashes(top: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames[:] = [d for d in dirnames if d not in _SKIP_DIRS]
        for name in filenames:
            full = Path(dirpath, name)
            if full.is_symlink():
                out[full.relative_to(top).as_posix()] = "link:" + os.readlink(full)
                continue
            out[full.relative_to(top).as_posix()] = hashlib.sha256(full.read_bytes()).hexdigest()
    return out


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
            shutil.copytree(self._root, partial, symlinks=True)
            partial.rename(self._tree)

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

    def read(self, rel: str) -> bytes:
        return self.resolve(rel).read_bytes()

    def write(self, rel: str, data: bytes) -> None:
        target = self.resolve(rel)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.codeloop-tmp")
        tmp.write_bytes(data)
        if target.exists():
            shutil.copymode(target, tmp)
        os.replace(tmp, target)

    def delete(self, rel: str) -> None:
        self.resolve(rel).unlink()

    def list(self, rel: str = ".") -> list[str]:
        base = self.resolve(rel)
        return sorted(p.name for p in base.iterdir())

    def changed_files(self) -> builtins.list[str]:
        before, after = _tree_hashes(self._root), _tree_hashes(self._tree)
        return sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))

    def diff(self) -> str:
        parts = []
        for rel in self.changed_files():
            a, b = self._root / rel, self._tree / rel
            before = a.read_bytes() if a.is_file() else None
            after = b.read_bytes() if b.is_file() else None
            parts.append(file_diff(rel, before, after))
        return "".join(parts)

    def apply(self) -> ApplyResult:
        result = ApplyResult()
        for rel in self.changed_files():
            src, dst = self._tree / rel, self._root / rel
            if src.exists() or src.is_symlink():
                dst.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, dst, follow_symlinks=False)
            else:
                dst.unlink(missing_ok=True)
            result.applied.append(rel)
        return result

    def discard(self) -> None:
        shutil.rmtree(self._tree, ignore_errors=True)
