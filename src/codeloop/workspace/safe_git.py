"""Run git on the host without letting the repository run commands of its own.

A repository can name programs in its `.git/config` (hooks, fsmonitor, pagers, filter and
diff drivers, ssh commands, signature verifiers) that git runs on ordinary commands like
`status`, `diff` or `log`, possibly through an `include.path` or `includeIf` that pulls in
a file of the repository's choosing. Every host-side git call of ours goes through `git()`:
it lists the configuration git will see (included files too) with the same environment and
repository, and overrides each program-running key, plus a fixed set that is always forced.
"""

from __future__ import annotations

import fnmatch
import os
import subprocess
from collections.abc import Sequence
from pathlib import Path

from codeloop.errors import CodeloopError

# Always forced, configured or not. Remote helpers (`foo::url`, `url.*.insteadOf`) run
# `git remote-foo`, which an alias of the repository's can answer: host git only ever talks
# to local paths, so every protocol but `file` is off.
BASE_FLAGS = (
    "--no-pager",
    "-c", "core.hooksPath=/dev/null",
    "-c", "core.fsmonitor=false",
    "-c", "log.showSignature=false",
    "-c", "safe.bareRepository=explicit",
    "-c", "protocol.allow=never",
    "-c", "protocol.file.allow=always",
    "-c", "protocol.ext.allow=never",
    "-c", "gc.auto=0",
    "-c", "maintenance.auto=false",
)

# Keys that make git run a program (lower-case, subsection as `*`), with a harmless value.
_NEUTRAL: dict[str, str] = {
    "core.pager": "cat",
    "pager.*": "false",
    "core.editor": "true",
    "sequence.editor": "true",
    "core.sshcommand": "false",
    "core.askpass": "",
    "core.alternaterefscommand": "true",
    "credential.helper": "",
    "credential.*.helper": "",
    # Run as `HOOK git pack-objects ...`, so `env` is a no-op. Git honours this key only from
    # the user's own config (not a repository's), and clears our overrides for the upload-pack
    # of a local fetch; the override covers only commands that run pack-objects themselves.
    "uploadpack.packobjectshook": "env",
    "remote.*.vcs": "",
    "alias.*": "",
    "diff.external": "true",
    "diff.*.command": "true",
    "diff.*.textconv": "cat",
    "filter.*.clean": "",
    "filter.*.smudge": "",
    "filter.*.process": "",
    "filter.*.required": "false",
    "merge.*.driver": "false",
    "submodule.*.update": "none",
    "gpg.program": "false",
    "gpg.*.program": "false",
    "gpg.ssh.defaultkeycommand": "false",
    "sendemail.smtpserver": "false",
}
# Any other key ending like these names a program too (trailer.*.cmd, mergetool.*.cmd, ...).
_PROGRAM_SUFFIXES = ("command", "cmd", "program", "driver", "helper", "hook", "editor", "pager",
                     "textconv", "askpass")
# Keys git takes first-wins, so no override of ours replaces them (core.gitproxy too, but
# git:// is off): a command that would run them is refused instead.
_FIRST_WINS = ("remote.*.uploadpack", "remote.*.receivepack")
_REMOTE_COMMANDS = {"fetch", "pull", "clone", "ls-remote", "remote", "push", "submodule",
                    "archive", "fetch-pack", "send-pack"}
_DIFF_COMMANDS = {"diff", "log", "show", "diff-tree", "diff-index", "diff-files", "format-patch"}
_TEXTCONV_COMMANDS = _DIFF_COMMANDS | {"blame", "grep"}
# Global options that would point git at another repository than the one we list config for.
_REPO_OPTIONS = ("-C", "--git-dir", "--work-tree", "--namespace", "--exec-path", "--config-env",
                 "--super-prefix", "--bare")


class GitError(CodeloopError):
    """A git command of ours failed, timed out, or could not be made safe."""


def _env() -> dict[str, str]:
    """The user's environment without GIT_* (their global config file is kept: it is theirs)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    if "GIT_CONFIG_GLOBAL" in os.environ:
        env["GIT_CONFIG_GLOBAL"] = os.environ["GIT_CONFIG_GLOBAL"]
    env.update(GIT_TERMINAL_PROMPT="0", GIT_CONFIG_NOSYSTEM="1", GIT_ATTR_NOSYSTEM="1",
               GIT_PAGER="cat", GIT_EDITOR="true", GIT_SEQUENCE_EDITOR="true", PAGER="cat")
    return env


def neutral_value(key: str) -> str | None:
    """The harmless value for a config key that runs a program, or None for other keys."""
    low = key.lower()
    for pattern, value in _NEUTRAL.items():
        if fnmatch.fnmatchcase(low, pattern):
            return value
    if low.rsplit(".", 1)[-1].endswith(_PROGRAM_SUFFIXES):
        return "false"
    return None


def _listed_keys(prefix: list[str], cwd: Path | None, env: dict[str, str],
                 timeout: float | None) -> list[str]:
    """Every config key git will read here, included files' keys too (same env and repo)."""
    listed = _run([*prefix, "config", "--list", "--includes", "--name-only", "-z"], cwd, env,
                  None, timeout)
    if listed.returncode != 0:
        raise GitError(
            f"git could not read the configuration in {cwd or Path.cwd()}: "
            + listed.stderr.decode("utf-8", "replace").strip(),
            "fix the repository's git configuration, or check that the directory exists",
        )
    return [raw.decode("utf-8", "surrogateescape") for raw in listed.stdout.split(b"\0") if raw]


def _overrides(keys: list[str]) -> dict[str, str]:
    """GIT_CONFIG_KEY_n/VALUE_n pairs neutralising every program-running key in `keys`.

    Passed through the environment, not `-c`: `-c` splits at the first '=', so a subsection
    such as `[filter "a=b"]` would escape a `-c filter.a=b.clean=` override.
    """
    pairs = {key: value for key in keys if (value := neutral_value(key)) is not None}
    out = {"GIT_CONFIG_COUNT": str(len(pairs))}
    for n, (key, value) in enumerate(pairs.items()):
        out[f"GIT_CONFIG_KEY_{n}"] = key
        out[f"GIT_CONFIG_VALUE_{n}"] = value
    return out


def _run(argv: list[str], cwd: Path | None, env: dict[str, str], input: bytes | None,
         timeout: float | None) -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run(argv, cwd=cwd, env=env, input=input, capture_output=True,
                              timeout=timeout, check=False)
    except subprocess.TimeoutExpired as exc:
        raise GitError(f"git timed out after {timeout:g}s in {cwd}",
                       "the repository may be very large, or another git holds a lock") from exc
    except OSError as exc:
        raise GitError(f"could not run git in {cwd}: {exc}",
                       "install git and check that the directory exists") from exc


def _checked_args(args: Sequence[str]) -> tuple[list[str], str]:
    """The caller's arguments and the git command among them; `-c` pairs may lead, options
    that switch repository may not."""
    out = list(args)
    i = 0
    while i < len(out) and out[i].startswith("-"):
        if out[i] != "-c":
            if out[i].split("=", 1)[0] in _REPO_OPTIONS or out[i].startswith("-C"):
                raise GitError(f"safe_git got the global option {out[i]}",
                               "pass the repository as cwd= or git_dir=")
            i += 1
            continue
        i += 2
    command = out[i] if i < len(out) else ""
    if command in _TEXTCONV_COMMANDS:
        extra = ["--no-ext-diff"] if command in _DIFF_COMMANDS else []
        out[i + 1:i + 1] = [*extra, "--no-textconv"]
    return out, command


def _refuse_first_wins(keys: list[str], command: str) -> None:
    if command not in _REMOTE_COMMANDS:
        return
    for key in keys:
        if any(fnmatch.fnmatchcase(key.lower(), p) for p in _FIRST_WINS):
            raise GitError(f"the repository's config sets {key}, a program git {command} "
                           "would run; codeloop does not run it",
                           "remove the setting from the repository's .git/config")


def git(args: Sequence[str], cwd: Path | None = None, *, git_dir: Path | None = None,
        check: bool = True, input: bytes | None = None,
        timeout: float | None = None,
        index_file: Path | None = None) -> subprocess.CompletedProcess[bytes]:
    """Run `git args` in `cwd` (or on the repository `git_dir`) with hooks, fsmonitor,
    signature programs, drivers, pagers, helpers and every other configured program
    disabled. `index_file` is an index of ours to use instead of the repository's (a
    commit built beside the user's index). Raises GitError on a timeout, and on failure
    when `check`."""
    env = _env()
    if index_file is not None:
        env["GIT_INDEX_FILE"] = str(index_file)
    prefix = ["git", *BASE_FLAGS]
    if git_dir is not None:
        prefix += ["--git-dir", str(git_dir)]
    checked, command = _checked_args(args)
    keys = _listed_keys(prefix, cwd, env, timeout)
    _refuse_first_wins(keys, command)
    env.update(_overrides(keys))
    argv = [*prefix, *checked]
    proc = _run(argv, cwd, env, input, timeout)
    if check and proc.returncode != 0:
        raise GitError(
            f"git {' '.join(args)} failed in {cwd or git_dir}: "
            + proc.stderr.decode("utf-8", "replace").strip(),
            "check that the directory is a git repository",
        )
    return proc


def git_text(args: Sequence[str], cwd: Path | None = None, *, git_dir: Path | None = None,
             check: bool = True, input: str | None = None,
             timeout: float | None = None,
             index_file: Path | None = None) -> subprocess.CompletedProcess[str]:
    """`git()` with text in and out (UTF-8; undecodable bytes replaced)."""
    proc = git(args, cwd, git_dir=git_dir, check=check, timeout=timeout,
               input=None if input is None else input.encode(), index_file=index_file)
    return subprocess.CompletedProcess(proc.args, proc.returncode,
                                       proc.stdout.decode("utf-8", "replace"),
                                       proc.stderr.decode("utf-8", "replace"))
