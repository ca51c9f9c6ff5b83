"""Write the session's changes into the user's tree after a checkpoint, and undo them.

Apply is all or nothing at the decision level: one conflict or refused file and nothing is
written. Each file is then replaced atomically (temp file + rename), never edited in place.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

from codeloop.workspace import fsops
from codeloop.workspace.changes import RawChange, Side, has_git_component, side_at
from codeloop.workspace.embedded import embedded_repositories
from codeloop.workspace.errors import ApplyFailed, NoCheckpoint, UnsafePath
from codeloop.workspace.hostfs import SafeRoot
from codeloop.workspace.links import leaves_tree
from codeloop.workspace.manifest import Manifest


@dataclass
class Verdict:
    conflicts: list[str]
    refused: dict[str, str]


def judge(raw: list[RawChange], manifest: Manifest, root_fd: int, merged: SafeRoot) -> Verdict:
    """Which changes may not be applied (refused) and which the user changed meanwhile.

    `merged` is the session's view: its links are the ones the user's tree will have."""
    verdict = Verdict([], {})
    with merged.open_dir() as merged_fd:
        hidden_repos = embedded_repositories(raw, merged_fd)
    for ch in raw:
        reason = _refusal(ch, merged) or hidden_repos.get(ch.rel, "")
        if reason:
            verdict.refused[ch.rel] = reason
            continue
        rec = manifest.entries.get(ch.rel)
        st = fsops.lstat_at(root_fd, ch.rel)
        if rec is None:
            if st is not None:
                verdict.conflicts.append(ch.rel)
        elif st is None or not rec.user_matches(st):
            verdict.conflicts.append(ch.rel)
    return verdict


def _refusal(ch: RawChange, merged: SafeRoot) -> str:
    if has_git_component(ch.rel):
        return "changes under .git are never applied"
    if ch.unsafe_parent:
        return "a parent directory in your tree is a symlink or not a directory"
    if ch.before is not None and ch.before.kind not in ("f", "l"):
        return "a directory or special file is in the way in your tree"
    after = ch.after
    if after is None:
        return ""
    if after.kind == "o":
        return "device nodes, FIFOs and sockets are never applied"
    if after.kind == "f" and after.special_bits:
        return "setuid/setgid files are never applied"
    if after.kind == "l":
        return _link_refusal(ch.rel, ch.before, os.fsdecode(after.data), merged)
    return ""


def _link_refusal(rel: str, before: Side | None, target: str, merged: SafeRoot) -> str:
    """A link leading out of the repository is applied only where the user's tree already
    had that very link (the user's own choice, not the session's)."""
    if before is not None and before.kind == "l" and os.fsdecode(before.data) == target:
        return ""
    if leaves_tree(merged, rel, target):
        return (f"symlink points outside the repository ({target!r}); codeloop never "
                "follows or applies such a link")
    return ""


def _new_mode(before: Side | None, after: Side) -> int:
    if before is not None and before.kind == "f" and before.git_mode == after.git_mode:
        return stat.S_IMODE(before.mode) & 0o777
    return 0o755 if after.mode & 0o111 else 0o644


def _put(base_fd: int, rel: str, side: Side, mode: int, created: list[str] | None) -> None:
    with fsops.parent_fd(base_fd, rel, create=True, created=created) as (pfd, name):
        if side.kind == "l":
            fsops.symlink_at(pfd, name, os.fsdecode(side.data))
        else:
            fsops.write_file_at(pfd, name, side.data, mode)


def _drop(base_fd: int, rel: str) -> None:
    try:
        with fsops.parent_fd(base_fd, rel) as (pfd, name):
            os.unlink(name, dir_fd=pfd)
    except FileNotFoundError:
        pass


def _holds_entries(base_fd: int, rel: str) -> bool:
    try:
        fd = fsops.open_dir(base_fd, fsops.split(rel))
    except (OSError, UnsafePath):
        return False
    try:
        return bool(os.listdir(fd))
    finally:
        os.close(fd)


def _prune_dirs(base_fd: int, merged_fd: int, rels: list[str]) -> None:
    """Remove directories the deletions emptied that are gone or empty in the merged view too.

    Git does not track empty directories, so an emptied one is not part of the change.
    """
    dirs = sorted({os.path.dirname(r) for r in rels} - {""}, key=len, reverse=True)
    for d in dirs:
        while d:
            if _holds_entries(merged_fd, d):
                break
            try:
                with fsops.parent_fd(base_fd, d) as (pfd, name):
                    os.rmdir(name, dir_fd=pfd)
            except OSError:
                break
            d = os.path.dirname(d)


def _fingerprint(base_fd: int, rel: str) -> str | None:
    """What a file holds (type, permission bits, content hash); None if absent or unreadable."""
    try:
        side = side_at(base_fd, rel)
    except (OSError, UnsafePath):
        return None
    if side is None:
        return None
    digest = hashlib.sha256(side.data).hexdigest()
    return f"{side.kind}:{stat.S_IMODE(side.mode):o}:{digest}"


def apply_changes(raw: list[RawChange], root_fd: int, merged_fd: int, cp_dir: Path) -> None:
    """Checkpoint the originals into `cp_dir`, then write every change into the user's tree."""
    files = cp_dir / "files"
    files.mkdir(parents=True)
    files_fd = os.open(files, fsops.DIR_FLAGS)
    try:
        items = []
        for ch in raw:
            if ch.before is not None:
                _put(files_fd, ch.rel, ch.before, stat.S_IMODE(ch.before.mode) & 0o777, None)
            items.append({"rel": ch.rel, "existed": ch.before is not None})
    finally:
        os.close(files_fd)
    record_path = cp_dir / "record.json"
    record: dict[str, object] = {"state": "applying", "items": items, "created_dirs": []}
    record_path.write_text(json.dumps(record))
    created: list[str] = []
    try:
        deletions = [ch for ch in raw if ch.after is None]
        for ch in deletions:
            _drop(root_fd, ch.rel)
        _prune_dirs(root_fd, merged_fd, [ch.rel for ch in deletions])
        for ch in raw:
            if ch.after is not None:
                _put(root_fd, ch.rel, ch.after, _new_mode(ch.before, ch.after), created)
    except (OSError, UnsafePath) as exc:
        _roll_back(raw, root_fd, created)
        record["state"] = "rolled_back"
        record_path.write_text(json.dumps(record))
        raise ApplyFailed(
            f"apply stopped ({exc}); the files it had written were put back",
            "check the named path in your repository and apply again",
        ) from exc
    for item in items:
        item["post"] = _fingerprint(root_fd, str(item["rel"]))
    record.update(state="applied", created_dirs=created)
    record_path.write_text(json.dumps(record))


def _roll_back(raw: list[RawChange], root_fd: int, created: list[str]) -> None:
    """Best effort: give every path back its version from before the apply."""
    for ch in raw:
        with suppress(OSError, UnsafePath):
            if ch.before is None:
                _drop(root_fd, ch.rel)
            else:
                _put(root_fd, ch.rel, ch.before, stat.S_IMODE(ch.before.mode) & 0o777, None)
    for d in sorted(created, key=len, reverse=True):
        with suppress(OSError, UnsafePath), fsops.parent_fd(root_fd, d) as (pfd, name):
            os.rmdir(name, dir_fd=pfd)


def latest_checkpoint(checkpoints: Path) -> str:
    applied = [p.name for p in checkpoints.glob("*")
               if (p / "record.json").is_file()
               and json.loads((p / "record.json").read_text()).get("state") == "applied"]
    if not applied:
        raise NoCheckpoint("there is no applied change set to undo",
                           "`codeloop apply ID` creates one")
    return max(applied, key=int)


def undo_changes(cp_dir: Path, root_fd: int) -> tuple[list[str], list[str]]:
    """Restore a checkpoint; returns (restored paths, paths the user changed since apply)."""
    record_path = cp_dir / "record.json"
    record = json.loads(record_path.read_text())
    if record.get("state") != "applied":
        raise NoCheckpoint(f"checkpoint {cp_dir.name} is not an applied change set")
    items = record["items"]
    changed_since = [i["rel"] for i in items if _fingerprint(root_fd, i["rel"]) != i.get("post")]
    if changed_since:
        return [], changed_since
    files_fd = os.open(cp_dir / "files", fsops.DIR_FLAGS)
    try:
        for item in items:
            rel = item["rel"]
            if not item["existed"]:
                _drop(root_fd, rel)
                continue
            st = fsops.lstat_at(files_fd, rel)
            if st is None:
                raise UnsafePath(f"checkpoint {cp_dir.name} lacks its copy of {rel}")
            if stat.S_ISLNK(st.st_mode):
                side = Side("l", st.st_mode, os.fsencode(fsops.readlink_at(files_fd, rel)), 0, 0)
            else:
                side = Side("f", st.st_mode, fsops.read_at(files_fd, rel), 0, 0)
            _put(root_fd, rel, side, stat.S_IMODE(st.st_mode), [])
    finally:
        os.close(files_fd)
    for d in sorted(record["created_dirs"], key=len, reverse=True):
        try:
            with fsops.parent_fd(root_fd, d) as (pfd, name):
                os.rmdir(name, dir_fd=pfd)
        except OSError:
            pass
    record["state"] = "undone"
    record_path.write_text(json.dumps(record))
    return [i["rel"] for i in items], []
