"""Put a session's changes on a new branch as one commit, beside the user's work.

The commit is built with plumbing only: a temporary index file of ours (never the
repository's), blobs by `hash-object`, a tree by `write-tree`, the commit by `commit-tree`
and the branch by `update-ref`, every call through `safe_git`. Nothing reads or writes the
user's working tree, index, HEAD or stash.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from codeloop.workspace.apply import Verdict
from codeloop.workspace.changes import RawChange, Side
from codeloop.workspace.errors import WorkspaceError
from codeloop.workspace.safe_git import GitError, git, git_text


class BranchRefused(WorkspaceError):
    """The changes cannot go onto a branch: conflicts, refused files, or a bad branch name."""

    def __init__(self, message: str, hint: str = "",
                 problems: dict[str, str] | None = None) -> None:
        super().__init__(message, hint)
        self.problems = problems or {}


@dataclass(frozen=True)
class BaseEntry:
    mode: str
    oid: str


@dataclass
class BranchPlan:
    """What the commit will hold: the base commit and each path's new entry (None: deleted)."""

    base: str
    changes: list[RawChange] = field(default_factory=list)
    # New files git ignores (caches, build output a command left): not committed.
    ignored: list[str] = field(default_factory=list)
    # Where the session's directory is in the repository ("" at its top, else "sub/dir/").
    prefix: str = ""

    @property
    def files(self) -> list[str]:
        return [ch.rel for ch in self.changes]

    def tree_path(self, rel: str) -> str:
        return self.prefix + rel

    def digest(self) -> str:
        """Names this change set on this base (what a recorded commit message describes)."""
        h = hashlib.sha256(self.base.encode())
        for ch in self.changes:
            h.update(b"\0" + ch.rel.encode("utf-8", "surrogateescape") + b"\0")
            if ch.after is not None:
                h.update(f"{ch.after.git_mode:o}".encode() + hashlib.sha256(ch.after.data).digest())
        return h.hexdigest()


def blob_id(data: bytes, oid_len: int) -> str:
    """The object id git gives a blob holding `data` (SHA-1 or SHA-256 repositories)."""
    algo = hashlib.sha256 if oid_len == 64 else hashlib.sha1
    return algo(b"blob %d\0" % len(data) + data).hexdigest()


def resolve_base(repo: Path, recorded: str | None) -> str:
    """The commit the branch starts from: the session's recorded base, else HEAD."""
    for rev in ([recorded] if recorded else []) + ["HEAD"]:
        proc = git_text(["rev-parse", "--verify", "--quiet", "--end-of-options",
                         f"{rev}^{{commit}}"], repo, check=False)
        if proc.returncode == 0:
            return proc.stdout.strip()
    raise BranchRefused(f"the repository at {repo} has no commit to branch from",
                        "make a first commit, or use `codeloop apply ID` without --branch")


def check_branch_name(repo: Path, name: str) -> str:
    """The full ref for a new branch `name`; refused if invalid or already there."""
    ref = f"refs/heads/{name}"
    valid = not name.startswith("-") and git_text(
        ["check-ref-format", ref], repo, check=False).returncode == 0
    if not valid:
        raise BranchRefused(f"{name!r} is not a valid branch name",
                            "pick a name like `codeloop/fix-parser`")
    exists = git_text(["rev-parse", "--verify", "--quiet", ref], repo, check=False)
    if exists.returncode == 0:
        raise BranchRefused(f"branch {name} already exists",
                            "pick another name: codeloop only creates new branches")
    return ref


def _base_entries(repo: Path, base: str) -> dict[str, BaseEntry]:
    out = git(["ls-tree", "-r", "-z", "--full-tree", base], repo).stdout
    entries: dict[str, BaseEntry] = {}
    for raw in out.split(b"\0"):
        if not raw:
            continue
        meta, _, path = raw.partition(b"\t")
        mode, _kind, oid = meta.decode().split(" ")
        entries[path.decode("utf-8", "surrogateescape")] = BaseEntry(mode, oid)
    return entries


def _matches(entry: BaseEntry | None, before: Side | None) -> bool:
    """The user's file as the session found it is what the base commit holds at that path."""
    if before is None:
        return entry is None
    if entry is None or entry.mode != f"{before.git_mode:o}":
        return False
    return entry.oid == blob_id(before.data, len(entry.oid))


def ignored_paths(repo: Path, rels: list[str]) -> set[str]:
    """Which of `rels` git ignores in the repository (its .gitignore files, info/exclude and
    your excludes file)."""
    if not rels:
        return set()
    listed = b"".join(rel.encode("utf-8", "surrogateescape") + b"\0" for rel in rels)
    out = git(["check-ignore", "-z", "--stdin"], repo, input=listed, check=False)
    if out.returncode not in (0, 1):
        raise GitError("git check-ignore failed: " + out.stderr.decode("utf-8", "replace"))
    return {os.fsdecode(p) for p in out.stdout.split(b"\0") if p}


def plan_branch(repo: Path, base: str, raw: list[RawChange], verdict: Verdict) -> BranchPlan:
    """The commit's content, or BranchRefused naming every file that stops it."""
    prefix = git_text(["rev-parse", "--show-prefix"], repo).stdout.strip()
    ignored = ignored_paths(repo, [ch.rel for ch in raw if ch.before is None])
    raw = [ch for ch in raw if ch.rel not in ignored]
    problems = {rel: why for rel, why in verdict.refused.items() if rel not in ignored}
    for rel in verdict.conflicts:
        if rel not in ignored:
            problems[rel] = "you changed it since the session began"
    entries = _base_entries(repo, base)
    for ch in raw:
        if ch.rel not in problems and not _matches(entries.get(prefix + ch.rel), ch.before):
            problems[ch.rel] = f"the diff does not apply to {base[:12]}: the file there " \
                               "differs from your copy the session changed"
    if problems:
        raise BranchRefused("nothing was committed", "commit or stash your own changes to "
                            "these files first, or `codeloop apply ID` them into your tree",
                            problems)
    return BranchPlan(base, raw, sorted(ignored), prefix)


def _index_line(repo: Path, ch: RawChange, path: str, null_oid: str, index: Path) -> bytes:
    rel = path.encode("utf-8", "surrogateescape")
    if ch.after is None:
        return b"0 " + null_oid.encode() + b"\t" + rel + b"\0"
    oid = git(["hash-object", "-w", "--no-filters", "--stdin"], repo, input=ch.after.data,
              index_file=index).stdout.decode().strip()
    return f"{ch.after.git_mode:o} {oid}\t".encode() + rel + b"\0"


def commit_plan(repo: Path, plan: BranchPlan, ref: str, commits: list[tuple[str, list[str]]],
                author: str | None, reflog: str) -> list[str]:
    """Write one commit per (message, files) in order, each on the one before, and create
    `ref` pointing at the last; returns the commit ids. Together they hold all of `plan`."""
    by_rel = {ch.rel: ch for ch in plan.changes}
    null_oid = "0" * len(plan.base)
    made: list[str] = []
    parent = plan.base
    with tempfile.TemporaryDirectory(prefix="codeloop-branch-") as tmp:
        index = Path(tmp) / "index"
        git(["read-tree", plan.base], repo, index_file=index)
        for message, files in commits:
            lines = b"".join(_index_line(repo, by_rel[rel], plan.tree_path(rel), null_oid, index)
                             for rel in files)
            git(["update-index", "-z", "--index-info"], repo, input=lines, index_file=index)
            tree = git_text(["write-tree"], repo, index_file=index).stdout.strip()
            parent = _commit_tree(repo, tree, parent, message, author)
            made.append(parent)
    _check_tree(repo, plan, tree)
    # The zero old value makes update-ref refuse if the branch appeared meanwhile.
    git(["update-ref", "-m", reflog, ref, parent, null_oid], repo)
    return made


def _commit_tree(repo: Path, tree: str, parent: str, message: str, author: str | None) -> str:
    identity: list[str] = []
    if author is not None:
        name, _, email = author.rpartition(" <")
        identity = ["-c", f"author.name={name}", "-c", f"author.email={email.rstrip('>')}"]
    try:
        return git_text([*identity, "commit-tree", "--no-gpg-sign", tree, "-p", parent,
                         "-F", "-"], repo, input=message).stdout.strip()
    except GitError as exc:
        raise GitError(exc.message, "set your identity with `git config --global user.name` "
                       "and user.email, or `[handoff] author` in codeloop's config") from exc


def _check_tree(repo: Path, plan: BranchPlan, tree: str) -> None:
    """The new tree differs from the base in exactly the planned paths (a file/directory
    clash that the index resolved by dropping an entry would show up here)."""
    out = git(["diff-tree", "-r", "-z", "--no-renames", "--name-only", plan.base, tree],
              repo).stdout
    changed = {os.fsdecode(p) for p in out.split(b"\0") if p}
    expected = {plan.tree_path(rel) for rel in plan.files}
    if changed != expected:
        odd = sorted(changed ^ expected)
        raise BranchRefused("nothing was committed: the branch's tree would not match the "
                            "session's changes at " + ", ".join(odd[:5]),
                            "a file and a directory of the same name clash with the base "
                            "commit; apply into your tree instead")
