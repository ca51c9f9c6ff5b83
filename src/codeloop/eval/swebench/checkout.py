"""Checkouts of a task's repository at its base commit, from a local bare mirror: fresh
ones (the judge's) and a reused one per repository (the agent's, so its index stays warm)."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from codeloop.errors import CodeloopError
from codeloop.index.registry import discard_index
from codeloop.workspace.safe_git import GitError, git_text


class CheckoutError(CodeloopError):
    """The repository could not be checked out at the task's commit."""


class PatchFailed(CodeloopError):
    """A patch did not apply to the checkout."""


def git(*args: str, cwd: Path | None = None, git_dir: Path | None = None, check: bool = True,
        input: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run git through safe_git (no repository-provided programs, SECURITY.md 11 and 43);
    raise CheckoutError with git's message on failure."""
    try:
        proc = git_text(["-c", "advice.detachedHead=false", *args], cwd, git_dir=git_dir,
                        check=False, input=input)
    except GitError as exc:
        raise CheckoutError(exc.message, exc.hint) from exc
    if check and proc.returncode != 0:
        raise CheckoutError(
            f"git {' '.join(args[:3])} failed: {proc.stderr.strip()[:500]}",
            "check that the mirror holds the commit (fetch it again if needed)",
        )
    return proc


def mirror_path(mirrors: Path, mirror_name: str) -> Path:
    """The bare mirror of `owner+name` under `mirrors`; raises CheckoutError if absent."""
    path = mirrors / mirror_name / "repo"
    if not (path / "HEAD").is_file():
        raise CheckoutError(
            f"no bare mirror at {path}",
            "pass --mirrors DIR where DIR/<owner>+<name>/repo is a bare clone of the repository",
        )
    return path


def checkout(mirror: Path, commit: str, dest: Path) -> Path:
    """Make `dest` a clone of `mirror` at `commit` (objects shared with the mirror, tags kept)."""
    if dest.exists():
        shutil.rmtree(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    # --shared borrows the mirror's objects: a clone costs a checkout, not a copy of history,
    # and the tags stay visible to version tools such as setuptools_scm.
    git("clone", "--quiet", "--shared", "--no-checkout", str(mirror), str(dest))
    git("checkout", "--quiet", "--detach", commit, cwd=dest)
    return dest


def refresh_checkout(mirror: Path, commit: str, dest: Path) -> Path:
    """Make `dest` exactly `commit` of `mirror`, nothing else in it: the checkout already there
    is moved (git rewrites only the files that differ, so its index updates incrementally);
    one that cannot be reused, or is not clean afterwards, is cloned afresh."""
    if _borrows_from(dest, mirror):
        try:
            # A fresh clone would see the mirror's current tags (version tools read them).
            git("fetch", "--quiet", "--force", "--tags", "--no-write-fetch-head", "origin",
                cwd=dest)
            git("checkout", "--quiet", "--force", "--detach", commit, cwd=dest)
            # -ff: nested repositories too; -x: ignored build artefacts of the last install.
            git("clean", "-ffdxq", cwd=dest)
            left = git("status", "--porcelain", "--ignored", "--untracked-files=all",
                       cwd=dest).stdout
            if not left.strip():
                return dest
        except CheckoutError:
            pass  # a damaged checkout (a lock left by a killed git, say): start again
    return checkout(mirror, commit, dest)


def _borrows_from(dest: Path, mirror: Path) -> bool:
    """Whether `dest` is a clone made by `checkout` from this very mirror."""
    alternates = dest / ".git" / "objects" / "info" / "alternates"
    try:
        lines = alternates.read_text("utf-8").split()
    except OSError:
        return False
    objects = os.path.realpath(mirror / "objects")
    return [os.path.realpath(line) for line in lines] == [objects]


@contextmanager
def task_checkout(mirror: Path, commit: str, home: Path, scratch: Path) -> Iterator[Path]:
    """The agent's checkout of `commit`: the reused one at `home` when this process can lock
    it, else (another process works in it) a fresh one under `scratch`, whose index is
    deleted afterwards."""
    home.parent.mkdir(parents=True, exist_ok=True)
    with (home.parent / f"{home.name}.lock").open("a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pass
        else:
            yield refresh_checkout(mirror, commit, home)
            return
    fresh = checkout(mirror, commit, scratch)
    try:
        yield fresh
    finally:
        discard_index(fresh)


def missing_files(mirror: Path, commit: str) -> list[str]:
    """Files of `commit` whose content the mirror lacks (a snapshot may leave out its largest
    objects); `git checkout` skips them with only a message, so a checkout lacks them too."""
    tree = git("ls-tree", "-r", "--full-tree", commit, git_dir=mirror, check=False)
    blobs: list[tuple[str, str]] = []
    for line in tree.stdout.splitlines():
        meta, _, path = line.partition("\t")
        fields = meta.split()
        if len(fields) == 3 and fields[1] == "blob":
            blobs.append((fields[2], path))
    if not blobs:
        return []
    checked = git("cat-file", "--batch-check", git_dir=mirror, check=False,
                  input="".join(f"{sha}\n" for sha, _ in blobs)).stdout.splitlines()
    return [path for (_, path), line in zip(blobs, checked, strict=False) if line.endswith(" missing")]


def apply_patch(repo: Path, patch: str, label: str) -> None:
    """Apply a unified diff to `repo` as the SWE-bench harness does: git apply, then patch."""
    if not patch.strip():
        return
    data = patch if patch.endswith("\n") else patch + "\n"
    first = git("apply", "--whitespace=nowarn", "-", cwd=repo, input=data, check=False)
    if first.returncode == 0:
        return
    second = subprocess.run(
        ["patch", "--batch", "--fuzz=5", "-p1", "--forward", "--no-backup-if-mismatch"],
        cwd=repo, input=data, capture_output=True, text=True, check=False,
    )
    if second.returncode != 0:
        raise PatchFailed(
            f"the {label} does not apply: {first.stderr.strip()[:300]}",
            "the patch must be a unified diff against the task's base commit",
        )


def working_diff(repo: Path) -> str:
    """The diff of the checkout's working tree against its commit, new files included."""
    git("add", "--all", "--intent-to-add", cwd=repo)
    return git("diff", "--no-color", "HEAD", cwd=repo).stdout
