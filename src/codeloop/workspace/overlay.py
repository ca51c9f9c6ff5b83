"""The session workspace: a hard-link farm of the user's repository that writes aside.

`path` is a real directory (the merged view). File tools replace files there by temp file +
rename, so a hard link shared with the user's tree is swapped out, never written through.
Commands run on a kernel overlay whose lower layer is the merged view; the sandbox hands the
overlay's upper layer to `absorb` after each command. The user's tree changes only on `apply`.
"""

from __future__ import annotations

import builtins
import contextlib
import fcntl
import json
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from codeloop.workspace import fsops
from codeloop.workspace.absorb import absorb_upper
from codeloop.workspace.apply import (
    Verdict,
    apply_changes,
    judge,
    latest_checkpoint,
    undo_changes,
)
from codeloop.workspace.base import ApplyResult, FileChange
from codeloop.workspace.changes import (
    RawChange,
    describe,
    evaluate,
    has_git_component,
    scan,
)
from codeloop.workspace.errors import (
    ProtectedPath,
    UnsafePath,
    WorkspaceError,
    WorkspaceStateError,
)
from codeloop.workspace.farm import build_farm, seal
from codeloop.workspace.hostfs import SafeRoot
from codeloop.workspace.manifest import Entry, Manifest
from codeloop.workspace.paths import confine


class OverlayWorkspace:
    """Per-session state lives in `state_dir`; opening it again (resume) reuses that state."""

    def __init__(self, root: Path, state_dir: Path, prefer_copy: bool = False) -> None:
        self._root = Path(os.path.realpath(root))
        if not self._root.is_dir():
            raise WorkspaceError(f"{root} is not a directory", "pass the repository's path")
        state_dir.mkdir(parents=True, exist_ok=True)
        self._state = Path(os.path.realpath(state_dir))
        if self._state == self._root or self._root in self._state.parents:
            raise WorkspaceError(
                f"the workspace state {self._state} lies inside the repository {self._root}",
                "set CODELOOP_DATA_DIR to a directory outside the repository",
            )
        self._merged = self._state / "merged"
        self._manifest_path = self._state / "manifest.json"
        self._journal = self._state / "touched.log"
        self._checkpoints = self._state / "checkpoints"
        self.last_dropped: builtins.list[str] = []
        self._loaded = (0, 0, 0)
        with self._locked():
            if self._manifest_path.is_file() and self._merged.is_dir():
                self._manifest = Manifest.load(self._manifest_path)
                self._loaded = self._manifest_stamp()
                if self._manifest.root != str(self._root):
                    raise WorkspaceStateError(
                        f"the workspace in {self._state} belongs to {self._manifest.root}, "
                        f"not {self._root}",
                        "use a separate state directory per repository",
                    )
            else:
                self._manifest = self._build(prefer_copy)

    # -- the Workspace protocol -------------------------------------------------------

    @property
    def root(self) -> Path:
        return self._root

    @property
    def path(self) -> Path:
        return self._merged

    @property
    def kind(self) -> str:
        return self._manifest.kind

    @property
    def state_dir(self) -> Path:
        return self._state

    def resolve(self, rel: str) -> Path:
        return confine(self._merged, self._inside(rel))

    def read(self, rel: str) -> bytes:
        with self._merged_fd() as mfd:
            return fsops.read_at(mfd, self._rel(self.resolve(rel)))

    def write(self, rel: str, data: bytes) -> None:
        target = self._writable(self._rel(self.resolve(rel)))
        with self._locked(), self._merged_fd() as mfd, \
                fsops.parent_fd(mfd, target, create=True) as (pfd, name):
            try:
                st: os.stat_result | None = os.stat(name, dir_fd=pfd, follow_symlinks=False)
            except FileNotFoundError:
                st = None
            if st is not None and not stat.S_ISREG(st.st_mode):
                raise UnsafePath(f"{target} changed into something other than a regular file",
                                 "read it again and retry the write")
            mode = stat.S_IMODE(st.st_mode) & 0o777 if st is not None else 0o644
            fsops.write_file_at(pfd, name, data, mode)
            self._touch([target])

    def delete(self, rel: str) -> None:
        inside = self._inside(rel).rstrip("/")
        if "\x00" in inside or inside.startswith("~"):
            confine(self._merged, inside)  # raises the same refusal as for reads and writes
        head, name = os.path.split(inside)
        if name in ("", ".", ".."):
            raise WorkspaceError(f"{rel!r} names no file to delete")
        parent = self._rel(confine(self._merged, head or "."))
        target = self._writable(f"{parent}/{name}" if parent != "." else name)
        with self._locked(), self._merged_fd() as mfd, \
                fsops.parent_fd(mfd, target) as (pfd, leaf):
            gone = fsops.files_below(pfd, leaf, target)
            if not fsops.remove_at(pfd, leaf):
                raise FileNotFoundError(f"{rel} does not exist in the workspace")
            self._touch(gone)

    def list(self, rel: str = ".") -> builtins.list[str]:
        target = self._rel(self.resolve(rel))
        with self._merged_fd() as mfd:
            fd = fsops.open_dir(mfd, fsops.split(target) if target != "." else [])
            try:
                return sorted(os.listdir(fd))
            finally:
                os.close(fd)

    def changed_files(self) -> builtins.list[str]:
        return sorted(ch.rel for ch in self._raw(False) if not has_git_component(ch.rel))

    def changes(self) -> builtins.list[FileChange]:
        """The session's changes as diff entries (renames paired by content), `.git` left out."""
        return describe([ch for ch in self._raw(False) if not has_git_component(ch.rel)])

    def diff(self) -> str:
        return "".join(c.diff for c in self.changes())

    def absorb(self, upper: Path) -> builtins.list[str]:
        """Merge an overlayfs upper layer (what one command changed) into the merged view."""
        with self._locked(), self._merged_fd() as mfd:
            ufd = os.open(upper, fsops.DIR_FLAGS)
            try:
                report = absorb_upper(ufd, mfd)
            finally:
                os.close(ufd)
            self.last_dropped = report.dropped
            changed = sorted(set(report.changed))
            self._touch(changed)
            return changed

    @contextmanager
    def layer(self) -> Iterator[tuple[Path, Path]]:
        """Fresh (upper, work) dirs for one command's overlay, on the merged view's filesystem
        so that `absorb` moves files by rename; removed afterwards."""
        layers = self._state / "layers"
        layers.mkdir(exist_ok=True)
        top = Path(tempfile.mkdtemp(dir=layers))
        upper, work = top / "upper", top / "work"
        upper.mkdir()
        work.mkdir()
        try:
            yield upper, work
        finally:
            _remove_tree(top)

    def apply(self) -> ApplyResult:
        """Write the changes into the user's tree (all or nothing), after a checkpoint."""
        with self._locked(), self._merged_fd() as mfd, self._root_fd() as rfd:
            raw = self._raw(True, mfd, rfd)
            result = ApplyResult()
            if not raw:
                return result
            verdict = judge(raw, self._manifest, rfd, SafeRoot(self._merged))
            if verdict.conflicts or verdict.refused:
                result.conflicts, result.refused = verdict.conflicts, verdict.refused
                return result
            self._checkpoints.mkdir(exist_ok=True)
            number = str(1 + max((int(p.name) for p in self._checkpoints.iterdir()
                                  if p.name.isdigit()), default=0))
            cp_dir = self._checkpoints / number
            entries = self._manifest.entries
            cp_dir.mkdir()
            (cp_dir / "entries.json").write_text(json.dumps(
                {ch.rel: entries[ch.rel].row() if ch.rel in entries else None for ch in raw}))
            apply_changes(raw, rfd, mfd, cp_dir)
            for ch in raw:
                self._record(ch.rel, rfd, mfd)
            self._save(clear_journal=True)
            result.applied = [ch.rel for ch in raw]
            result.checkpoint = number
            return result

    def pending(self) -> tuple[builtins.list[RawChange], Verdict]:
        """The changes `apply` would write and what stops it, without writing anything
        (a branch hand-off builds its commit from them)."""
        with self._locked(), self._merged_fd() as mfd, self._root_fd() as rfd:
            raw = self._raw(True, mfd, rfd)
            return raw, judge(raw, self._manifest, rfd, SafeRoot(self._merged))

    def undo(self, checkpoint: str | None = None) -> builtins.list[str]:
        """Restore the user's files from an applied checkpoint (the latest by default)."""
        with self._locked(), self._merged_fd() as mfd, self._root_fd() as rfd:
            self._refresh()
            number = checkpoint or latest_checkpoint(self._checkpoints)
            cp_dir = self._checkpoints / number
            if not (cp_dir / "record.json").is_file():
                raise WorkspaceError(f"no checkpoint {number}", "`codeloop undo ID` takes no id "
                                     "to restore the latest apply")
            restored, changed_since = undo_changes(cp_dir, rfd)
            if changed_since:
                raise WorkspaceError(
                    "you changed these files after apply; undo would overwrite them: "
                    + ", ".join(changed_since),
                    "restore or commit them yourself, then undo again",
                )
            before = json.loads((cp_dir / "entries.json").read_text())
            for rel in restored:
                if before.get(rel) is None:
                    self._manifest.entries.pop(rel, None)
                else:
                    self._manifest.entries[rel] = Entry(*before[rel])
                    self._record(rel, rfd, mfd, user_only=True)
            self._save(clear_journal=False)
            self._touch(restored)
            return restored

    def discard(self) -> None:
        """Drop the session's changes: rebuild the merged view from the user's current tree."""
        with self._locked():
            self._manifest = self._build(self._manifest.kind == "copy")

    # -- internals ------------------------------------------------------------------

    def _build(self, prefer_copy: bool) -> Manifest:
        for stale in (self._merged, self._state / "merged.partial", self._state / "merged.old"):
            if stale.exists():
                old = self._state / "merged.old"
                if stale != old:
                    stale.rename(old)
                shutil.rmtree(old)
        partial = self._state / "merged.partial"
        manifest = build_farm(self._root, partial, prefer_copy)
        partial.rename(self._merged)
        seal(manifest, self._merged, self._state / "sealed")
        self._manifest = manifest
        self._save(clear_journal=True)
        return manifest

    def _save(self, clear_journal: bool) -> None:
        self._manifest.save(self._manifest_path)
        self._loaded = self._manifest_stamp()
        if clear_journal:
            self._journal.write_text("")

    def _touch(self, rels: builtins.list[str]) -> None:
        if rels:
            with self._journal.open("a") as f:
                f.write("".join(r + "\n" for r in rels))

    def _record(self, rel: str, rfd: int, mfd: int, user_only: bool = False) -> None:
        """Take the current user and merged stats of `rel` as the new baseline."""
        ust, mst = fsops.lstat_at(rfd, rel), fsops.lstat_at(mfd, rel)
        if ust is None or mst is None:
            self._manifest.entries.pop(rel, None)
            return
        kind = "l" if stat.S_ISLNK(ust.st_mode) else "f"
        fresh = Entry.from_stats(kind, ust, mst)
        if user_only and rel in self._manifest.entries:
            old = self._manifest.entries[rel]
            fresh = Entry(kind, fresh.u_ino, fresh.u_mtime, fresh.u_size, fresh.u_mode,
                          old.m_ino, old.m_mtime, old.m_ctime, old.m_size, old.m_mode)
        self._manifest.entries[rel] = fresh
        parent = os.path.dirname(rel)
        while parent and parent not in self._manifest.dirs:
            dst = fsops.lstat_at(mfd, parent)
            if dst is None or not stat.S_ISDIR(dst.st_mode):
                break
            self._manifest.dirs[parent] = (dst.st_ino, -1, -1)
            parent = os.path.dirname(parent)

    def _manifest_stamp(self) -> tuple[int, int, int]:
        st = self._manifest_path.stat()
        return st.st_ino, st.st_mtime_ns, st.st_size

    def _refresh(self) -> None:
        """Reload the manifest if another process (say `codeloop apply`) saved a newer one."""
        if self._manifest_stamp() != self._loaded:
            self._manifest = Manifest.load(self._manifest_path)
            self._loaded = self._manifest_stamp()

    def _raw(self, include_git: bool, mfd: int | None = None,
             rfd: int | None = None) -> builtins.list[RawChange]:
        self._refresh()
        suspects = scan(self._manifest, SafeRoot(self._merged), include_git)
        if self._journal.is_file():
            suspects |= {r for r in self._journal.read_text().splitlines() if r}
        if mfd is not None and rfd is not None:
            return evaluate(suspects, rfd, mfd)
        with self._merged_fd() as m, self._root_fd() as r:
            return evaluate(suspects, r, m)

    def _inside(self, rel: str) -> str:
        """Accept the user's own absolute paths into the repository as repository paths."""
        if os.path.isabs(rel):
            real = os.path.normpath(rel)
            base = str(self._root)
            if real == base:
                return "."
            if real.startswith(base + os.sep):
                return real[len(base) + 1:]
        return rel

    def _rel(self, path: Path) -> str:
        return path.relative_to(self._merged).as_posix() or "."

    @staticmethod
    def _writable(rel: str) -> str:
        if rel == "." or has_git_component(rel):
            raise ProtectedPath(f"{rel} may not be changed by the agent",
                                "the repository's .git is read-only for the session")
        return rel

    @contextmanager
    def _locked(self) -> Iterator[None]:
        with (self._state / "lock").open("a") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)

    @contextmanager
    def _merged_fd(self) -> Iterator[int]:
        fd = os.open(self._merged, fsops.DIR_FLAGS)
        try:
            yield fd
        finally:
            os.close(fd)

    @contextmanager
    def _root_fd(self) -> Iterator[int]:
        fd = os.open(self._root, fsops.DIR_FLAGS)
        try:
            yield fd
        finally:
            os.close(fd)


def _remove_tree(top: Path) -> None:
    """Remove a layer; overlayfs leaves its work dir mode 000, which an owner may chmod back."""
    for dirpath, dirnames, _files in os.walk(top):  # top-down: open each before descending
        for name in dirnames:
            path = os.path.join(dirpath, name)
            if not os.path.islink(path):
                with contextlib.suppress(OSError):
                    os.chmod(path, 0o700)
    shutil.rmtree(top)
