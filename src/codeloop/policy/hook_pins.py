"""Hooks run the user's files as they were when the session started, never the workspace's.

A hook command names files (`python3 .claude/hooks/guard.py`, `$CLAUDE_PROJECT_DIR/x.sh`,
`~/bin/check`). They resolve against the user's own repository, and each one that exists is
pinned by sha256 when the session starts (recorded in its start event, so a resume checks
against the same pins). Before every run the files are looked at again: one that changed,
vanished, appeared, became a link, or lies in the session's workspace or state directory is
refused. Under the repository files are read through `SafeRoot`, so a link planted there is
never followed; outside it (the user's dotfiles) links are the user's own and are followed.
Programs found on PATH (`python3`, `jq`) are not pinned: they are not the repository's, no
sandboxed command can write them, and an upgrade would otherwise break every session.
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from codeloop.events import HookFileData
from codeloop.workspace.errors import UnsafePath
from codeloop.workspace.hostfs import SafeRoot

_VAR = re.compile(r"\$(?:\{(\w+)\}|(\w+))")
_PUNCTUATION = set("();<>|&")
_MAX_DEPTH = 3  # `bash -c '...'` inside `sh -c "..."`: words with spaces are split again
_RESTART = "review the change, then start a new session (hook files are pinned at its start)"


def _expand(word: str, env: Mapping[str, str]) -> str:
    word = _VAR.sub(lambda m: env.get(m.group(1) or m.group(2), ""), word)
    return os.path.expanduser(word) if word.startswith("~") else word


def _words(command: str, depth: int = 0) -> list[str]:
    """Every shell word of `command` (quotes removed), words holding spaces split again, and
    the value part of `--opt=value` / `VAR=value` as a word of its own."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    out: list[str] = []
    for word in lexer:  # ValueError on an unbalanced quote
        if not word or set(word) <= _PUNCTUATION:
            continue
        out.append(word)
        if "=" in word:
            out.append(word.split("=", 1)[1])
        if depth < _MAX_DEPTH and any(c.isspace() for c in word):
            out.extend(_words(word, depth + 1))
    return out


def named_paths(command: str, project_dir: Path) -> list[Path]:
    """The absolute paths the words of `command` would name, run in `project_dir`."""
    project = str(project_dir)
    # The variables as the hook's shell will see them (run_hook sets the first three).
    env = {**os.environ, "CODELOOP_PROJECT_DIR": project, "CLAUDE_PROJECT_DIR": project,
           "PWD": project}
    seen: dict[str, None] = {}
    for word in _words(command):
        text = _expand(word, env)
        if not text or "\x00" in text:
            continue
        seen[os.path.normpath(os.path.join(project, text))] = None
    return [Path(p) for p in seen]


def _inside(path: Path, top: Path) -> bool:
    return path == top or top in path.parents


def _state(path: Path, project_dir: Path) -> str:
    """`sha256:<hex>` for a regular file; `absent`, `dir`, `link` or `special` otherwise."""
    if _inside(path, project_dir):
        root = SafeRoot(project_dir)
        rel = path.relative_to(project_dir)
        st = root.lstat(rel)
        if st is None:  # absent, or reachable only through a link on the way
            return "link" if os.path.lexists(path) else "absent"
        if stat.S_ISLNK(st.st_mode):
            return "link"
        if stat.S_ISDIR(st.st_mode):
            return "dir"
        try:
            data = root.read_bytes(rel)
        except UnsafePath:  # swapped for a link or a FIFO since the lstat
            return "special"
        except (FileNotFoundError, NotADirectoryError):
            return "absent"
        return "sha256:" + hashlib.sha256(data).hexdigest()
    try:  # O_NONBLOCK: a FIFO swapped in must not hang the policy
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except (FileNotFoundError, NotADirectoryError):
        return "absent"
    except IsADirectoryError:
        return "dir"
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            return "dir" if stat.S_ISDIR(mode) else "special"
        digest = hashlib.sha256()
        for chunk in iter(lambda: os.read(fd, 1 << 20), b""):
            digest.update(chunk)
    finally:
        os.close(fd)
    return "sha256:" + digest.hexdigest()


def pin_hook_files(commands: Iterable[str], project_dir: Path) -> list[HookFileData]:
    """Path + sha256 of every regular file the hook commands name, as they are now."""
    project = Path(os.path.realpath(project_dir))
    pins: dict[str, str] = {}
    for command in commands:
        try:
            paths = named_paths(command, project)
        except ValueError:
            continue  # unparsable: refused when it would run
        for path in paths:
            try:
                state = _state(path, project)
            except OSError:
                continue
            if state.startswith("sha256:"):
                pins[str(path)] = state.removeprefix("sha256:")
    return [HookFileData(path=p, sha256=h) for p, h in pins.items()]


@dataclass(frozen=True)
class HookGuard:
    """Where hooks run (the user's repository) and the files they may run, by content."""

    project_dir: Path
    pins: Mapping[str, str] = field(default_factory=dict)  # path -> sha256
    forbidden: tuple[Path, ...] = ()  # the session's workspace view and state directory

    @classmethod
    def recorded(cls, project_dir: Path, pins: Iterable[HookFileData],
                 forbidden: Iterable[Path] = ()) -> HookGuard:
        """A guard over the pins a session recorded at its start."""
        return cls(Path(os.path.realpath(project_dir)), {p.path: p.sha256 for p in pins},
                   tuple(Path(os.path.realpath(f)) for f in forbidden))

    @classmethod
    def pin_now(cls, commands: Iterable[str], project_dir: Path) -> HookGuard:
        """A guard pinning the files as they are now (`policy check`, one-off use)."""
        return cls.recorded(project_dir, pin_hook_files(commands, project_dir))

    def refusal(self, command: str) -> str | None:
        """Why `command` may not run now, or None when every file it names is as pinned."""
        try:
            paths = named_paths(command, self.project_dir)
        except ValueError as exc:
            return f"cannot read the hook command ({exc}); fix it in your configuration"
        for path in paths:
            real = Path(os.path.realpath(path))
            if any(_inside(path, f) or _inside(real, f) for f in self.forbidden):
                return (f"the hook names {path}, inside the session's workspace; nothing "
                        "there runs on the host: point the hook at your own files")
            try:
                state = _state(path, self.project_dir)
            except OSError as exc:
                return f"cannot read hook file {path} ({exc.strerror or exc}); {_RESTART}"
            pinned = self.pins.get(str(path))
            what = _change(state, pinned)
            if what:
                return f"hook file {path} {what}; {_RESTART}"
        return None


def _change(state: str, pinned: str | None) -> str:
    """What happened to a hook file since the pin, or "" when nothing did."""
    if pinned is None:
        if state in ("absent", "dir"):
            return ""
        if state == "link":
            return ("is a symbolic link inside your repository (or lies under one), which "
                    "codeloop never follows: name the real file in the hook")
        return "was not there as a regular file when the session started"
    if state == "sha256:" + pinned:
        return ""
    return {"absent": "is missing since the session started",
            "link": "was replaced by a symbolic link since the session started",
            "dir": "was replaced by a directory since the session started",
            "special": "is no longer a regular file"}.get(
                state, "changed since the session started")
