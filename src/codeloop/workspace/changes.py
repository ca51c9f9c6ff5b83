"""Find the session's changes: scan the merged view, compare to the manifest, read only suspects.

In a hard-link farm an untouched file is the user's own inode, so the inode the directory
listing already returns settles most files without a stat or a read.
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass

from codeloop.workspace import fsops
from codeloop.workspace.base import FileChange
from codeloop.workspace.diffing import EXECUTABLE, REGULAR, SYMLINK, file_diff, is_binary
from codeloop.workspace.errors import UnsafePath
from codeloop.workspace.hostfs import SafeRoot
from codeloop.workspace.manifest import DirIndex, Manifest


@dataclass
class Side:
    """One side of a change: a regular file ("f"), symlink ("l"), directory ("d") or other ("o")."""

    kind: str
    mode: int
    data: bytes
    dev: int
    ino: int

    @property
    def git_mode(self) -> int:
        if self.kind == "l":
            return SYMLINK
        if self.kind == "f":
            return EXECUTABLE if self.mode & 0o111 else REGULAR
        return stat.S_IFMT(self.mode)

    @property
    def special_bits(self) -> int:
        return self.mode & (stat.S_ISUID | stat.S_ISGID)


@dataclass
class RawChange:
    """A path whose merged-view entry differs from the user's tree (`None` = absent)."""

    rel: str
    before: Side | None
    after: Side | None
    unsafe_parent: bool = False


def has_git_component(rel: str) -> bool:
    return any(part.lower() == ".git" for part in rel.split("/"))


def scan(manifest: Manifest, merged: SafeRoot, include_git: bool) -> set[str]:
    """Paths that may differ from the farm-time state; over-reports, never under-reports.

    A directory is settled as a whole when its stamp (inode, mtime, ctime) is trusted and
    unchanged, or when its {name: inode} listing equals the recorded one (a hard link still
    shared with the user's file keeps its inode number from being reused). Entries with
    inodes of their own (symlinks, copies) are settled by their full stat. Directories are
    opened without following links: one a command swapped for a link is reported, not read.
    """
    index = manifest.index()
    suspects: set[str] = set()
    stack = [""]
    while stack:
        drel = stack.pop()
        try:
            with merged.open_dir(drel) as dfd:
                _scan_dir(manifest, index, dfd, drel, include_git, stack, suspects)
        except (FileNotFoundError, NotADirectoryError, UnsafePath):
            continue  # gone or no longer a directory: the parent's listing reports it
    return suspects


def _scan_dir(manifest: Manifest, index: DirIndex, dfd: int, drel: str, include_git: bool,
              stack: list[str], suspects: set[str]) -> None:
    prefix = drel + "/" if drel else ""
    dst = os.fstat(dfd)
    listing: list[os.DirEntry[str]] = []
    expected = index.expected.get(drel)
    unchanged = index.trusted.get(drel) == (dst.st_ino, dst.st_mtime_ns, dst.st_ctime_ns)
    if not unchanged:
        with os.scandir(dfd) as it:
            listing = list(it)
        unchanged = {e.name: e.inode() for e in listing} == expected
    if unchanged:
        for name in index.subdirs.get(drel, ()):
            if include_git or prefix + name != ".git":
                stack.append(prefix + name)
    else:
        _scan_changed_dir(manifest, listing, expected or {}, prefix, include_git,
                          stack, suspects)
    for name in index.own.get(drel, ()):
        rec = manifest.entries[prefix + name]
        try:
            st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
        except FileNotFoundError:
            continue  # reported as deleted by the listing comparison
        if not rec.merged_matches(st):
            suspects.add(prefix + name)


def _scan_changed_dir(manifest: Manifest, listing: list[os.DirEntry[str]],
                      expected: dict[str, int], prefix: str, include_git: bool,
                      stack: list[str], suspects: set[str]) -> None:
    entries, dirs = manifest.entries, manifest.dirs
    for e in listing:
        rel = prefix + e.name
        if e.is_dir(follow_symlinks=False):
            if include_git or rel != ".git":
                stack.append(rel)
            if rel in entries:
                suspects.add(rel)
            continue
        if rel in dirs:
            suspects.update(_below(manifest, rel, include_git))
        rec = entries.get(rel)
        kind = "l" if e.is_symlink() else "f" if e.is_file(follow_symlinks=False) else "o"
        if rec is None or kind != rec.kind or e.inode() != rec.m_ino:
            suspects.add(rel)
    present = {e.name for e in listing}
    for name in expected.keys() - present:
        rel = prefix + name
        if rel in entries:
            suspects.add(rel)
        elif rel in dirs and (include_git or rel != ".git"):
            suspects.update(_below(manifest, rel, include_git))


def _below(manifest: Manifest, rel: str, include_git: bool) -> list[str]:
    start = rel + "/"
    return [k for k in manifest.entries
            if k.startswith(start) and (include_git or not k.startswith(".git/"))]


def side_at(base_fd: int, rel: str) -> Side | None:
    """What `rel` is below `base_fd`, read without following links; UnsafePath for a bad parent."""
    with fsops.parent_fd(base_fd, rel) as (pfd, name):
        try:
            st = os.stat(name, dir_fd=pfd, follow_symlinks=False)
        except FileNotFoundError:
            return None
        if stat.S_ISLNK(st.st_mode):
            data = os.fsencode(os.readlink(name, dir_fd=pfd))
            return Side("l", st.st_mode, data, st.st_dev, st.st_ino)
    if stat.S_ISREG(st.st_mode):
        return Side("f", st.st_mode, fsops.read_at(base_fd, rel), st.st_dev, st.st_ino)
    kind = "d" if stat.S_ISDIR(st.st_mode) else "o"
    return Side(kind, st.st_mode, b"", st.st_dev, st.st_ino)


def _same(a: Side, b: Side) -> bool:
    if (a.dev, a.ino) == (b.dev, b.ino):
        return True
    return (a.kind == b.kind and a.git_mode == b.git_mode and a.special_bits == b.special_bits
            and a.data == b.data)


def evaluate(suspects: set[str], root_fd: int, merged_fd: int) -> list[RawChange]:
    """The suspects that really differ between the merged view and the user's current tree."""
    out: list[RawChange] = []
    for rel in sorted(suspects):
        try:
            after = side_at(merged_fd, rel)
        except (FileNotFoundError, UnsafePath):
            after = None
        if after is not None and after.kind == "d":
            after = None
        unsafe = False
        try:
            before = side_at(root_fd, rel)
        except FileNotFoundError:
            before = None
        except UnsafePath:
            before, unsafe = None, True
        if before is not None and before.kind == "d" and after is None:
            continue
        if before is None and after is None:
            continue
        if before is not None and after is not None and _same(before, after):
            continue
        out.append(RawChange(rel, before, after, unsafe))
    return out


def _mode(side: Side | None) -> str | None:
    return None if side is None else f"{side.git_mode:o}"


def describe(raw: list[RawChange]) -> list[FileChange]:
    """Group raw changes into diff entries, pairing an exact-content delete and add as a rename."""
    by_hash: dict[str, RawChange] = {}
    for ch in raw:
        if ch.after is None and ch.before is not None and ch.before.kind == "f" and ch.before.data:
            by_hash.setdefault(hashlib.sha1(ch.before.data).hexdigest(), ch)
    renamed_from: dict[str, RawChange] = {}
    for ch in raw:
        if ch.before is None and ch.after is not None and ch.after.kind == "f" and ch.after.data:
            src = by_hash.pop(hashlib.sha1(ch.after.data).hexdigest(), None)
            if src is not None:
                renamed_from[ch.rel] = src
    consumed = {src.rel for src in renamed_from.values()}
    out: list[FileChange] = []
    for ch in raw:
        if ch.rel in consumed:
            continue
        src = renamed_from.get(ch.rel)
        if src is not None:
            out.append(_entry(ch.rel, src.before, ch.after, "renamed", src.rel))
        elif ch.before is None:
            out.append(_entry(ch.rel, None, ch.after, "added"))
        elif ch.after is None:
            out.append(_entry(ch.rel, ch.before, None, "deleted"))
        elif ch.before.kind != ch.after.kind:
            out.append(_entry(ch.rel, ch.before, None, "type"))
            out[-1].diff += _entry(ch.rel, None, ch.after, "type").diff
            out[-1].new_mode = _mode(ch.after)
        elif ch.before.data == ch.after.data:
            out.append(_entry(ch.rel, ch.before, ch.after, "mode"))
        else:
            out.append(_entry(ch.rel, ch.before, ch.after, "modified"))
    return out


def _entry(rel: str, before: Side | None, after: Side | None, status: str,
           old_rel: str | None = None) -> FileChange:
    a = None if before is None else before.data
    b = None if after is None else after.data
    text = file_diff(rel, a, b, old_mode=before.git_mode if before else REGULAR,
                     new_mode=after.git_mode if after else REGULAR, old_rel=old_rel)
    binary = is_binary(a or b"") or is_binary(b or b"")
    return FileChange(rel, status, old_rel, _mode(before), _mode(after), binary, text)
