"""A task's checkout: its directory, repository or inline files as a fresh git repository."""

from __future__ import annotations

import shutil
from pathlib import Path, PurePosixPath

from codeloop.eval.suite.tasks import SuiteError, SuiteTask
from codeloop.eval.swebench.checkout import git

_AUTHOR = ("-c", "user.name=codeloop eval", "-c", "user.email=eval@codeloop.invalid")


def _inline_path(rel: str) -> PurePosixPath:
    path = PurePosixPath(rel)
    if path.is_absolute() or ".." in path.parts or not path.parts or path.parts[0] == ".git":
        raise SuiteError(f"inline file {rel!r} is not a plain relative path",
                         "name inline files relative to the task's root, without '..'")
    return path


def _commit_all(dest: Path) -> None:
    git("init", "-q", "-b", "main", cwd=dest)
    git("add", "-A", cwd=dest)
    git(*_AUTHOR, "commit", "-q", "--allow-empty", "--no-verify", "-m", "task", cwd=dest)


def checkout(task: SuiteTask, dest: Path) -> Path:
    """Make `dest` hold the task's code at its commit, as a git repository with one commit
    the session's diff is taken against."""
    if task.files:
        dest.mkdir(parents=True)
        for rel, text in task.files.items():
            target = dest / _inline_path(rel)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        _commit_all(dest)
        return dest
    source = Path(task.repo)
    if not source.is_dir():
        raise SuiteError(f"task {task.id}: no directory at {source}",
                         "`repo` names a directory or git repository, relative to the suite file")
    if (source / ".git").exists() or (source / "HEAD").is_file():
        git("clone", "-q", "--no-hardlinks", "--no-checkout", str(source), str(dest))
        git("checkout", "-q", task.commit or "HEAD", cwd=dest)
        if task.commit:
            git("checkout", "-q", "-B", "main", cwd=dest)
        return dest
    if task.commit:
        raise SuiteError(f"task {task.id}: `commit` is set but {source} is not a git repository",
                         "drop `commit`, or point `repo` at a git repository")
    # Links are copied as links, never followed out of the task's directory.
    shutil.copytree(source, dest, symlinks=True)
    _commit_all(dest)
    return dest
