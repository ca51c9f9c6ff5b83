"""Run git on the host without letting the repository run commands of its own.

A repository can name programs in its `.git/config` (hooks, fsmonitor, pagers, filter and
diff drivers, ssh commands) that git runs on ordinary commands like `status` or `diff`.
Every host-side git call of ours goes through `git()`, which turns those off.
"""

from __future__ import annotations

import fnmatch
import os
import subprocess
from collections.abc import Sequence
from pathlib import Path

from codeloop.errors import CodeloopError

BASE_FLAGS = ("--no-pager", "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false",
              "-c", "protocol.ext.allow=never")

# Keys that make git run a program, with the value that makes it harmless.
_NEUTRAL: dict[str, str] = {
    "core.pager": "cat",
    "core.editor": "true",
    "sequence.editor": "true",
    "core.sshcommand": "false",
    "core.gitproxy": "",
    "core.askpass": "",
    "core.alternaterefscommand": "",
    "credential.helper": "",
    "gpg.program": "false",
    "gpg.ssh.program": "false",
    "gpg.x509.program": "false",
    "gpg.openpgp.program": "false",
    "diff.external": "true",
    "filter.*.clean": "",
    "filter.*.smudge": "",
    "filter.*.process": "",
    "filter.*.required": "false",
    "diff.*.textconv": "cat",
    "diff.*.command": "true",
    "merge.*.driver": "false",
    "pager.*": "cat",
}
_DIFF_COMMANDS = {"diff", "log", "show", "diff-tree", "diff-index", "diff-files", "format-patch"}


class GitError(CodeloopError):
    """A git command of ours failed."""


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_TERMINAL_PROMPT="0", GIT_CONFIG_NOSYSTEM="1", GIT_PAGER="cat",
               GIT_EDITOR="true", PAGER="cat")
    return env


def _overrides(cwd: Path, env: dict[str, str]) -> list[str]:
    """`-c key=value` pairs that neutralise every program-running key the config sets."""
    listed = subprocess.run(["git", *BASE_FLAGS, "config", "--list", "--name-only", "-z"],
                            cwd=cwd, env=env, capture_output=True, check=False)
    out: list[str] = []
    for raw in listed.stdout.split(b"\0"):
        key = raw.decode("utf-8", "replace").strip()
        if not key or "\n" in key:
            continue
        low = key.lower()
        for pattern, value in _NEUTRAL.items():
            if fnmatch.fnmatchcase(low, pattern):
                out += ["-c", f"{key}={value}"]
                break
    return out


def git(args: Sequence[str], cwd: Path, *, check: bool = True,
        input: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    """Run `git args` in `cwd` with hooks, fsmonitor, ext:: and configured programs disabled."""
    env = _env()
    argv = ["git", *BASE_FLAGS, *_overrides(cwd, env)]
    args = list(args)
    if args and args[0] in _DIFF_COMMANDS:
        args.insert(1, "--no-ext-diff")
    proc = subprocess.run([*argv, *args], cwd=cwd, env=env, input=input,
                          capture_output=True, check=False)
    if check and proc.returncode != 0:
        raise GitError(
            f"git {' '.join(args)} failed in {cwd}: "
            + proc.stderr.decode("utf-8", "replace").strip(),
            "check that the directory is a git repository",
        )
    return proc
