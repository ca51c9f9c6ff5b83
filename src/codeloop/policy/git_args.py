"""Reading a git command line as git does: global options, then the subcommand."""

from __future__ import annotations

from dataclasses import dataclass

# Global options that take their value as the next word.
_WITH_VALUE = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--super-prefix",
                         "--config-env", "--attr-source", "--list-cmds"})
_FLAGS = frozenset({
    "-v", "--version", "-h", "--help", "-p", "--paginate", "-P", "--no-pager", "--bare",
    "--no-replace-objects", "--no-lazy-fetch", "--no-optional-locks", "--no-advice",
    "--literal-pathspecs", "--glob-pathspecs", "--noglob-pathspecs", "--icase-pathspecs",
    "--html-path", "--man-path", "--info-path", "--exec-path",
})


@dataclass(frozen=True)
class GitLine:
    """`git` argv split: `at` is the subcommand's index in argv (0 when there is none);
    `unknown` names a global option git's table does not have (so the split is a guess)."""

    at: int
    configs: tuple[str, ...]
    unknown: str = ""

    def sub(self, argv: tuple[str, ...] | list[str]) -> str:
        return argv[self.at] if self.at else ""


def split_git(argv: tuple[str, ...] | list[str]) -> GitLine:
    """Find the subcommand after git's global options; `-c` values are collected."""
    configs: list[str] = []
    i = 1
    while i < len(argv):
        a = argv[i]
        key = a.split("=", 1)[0]
        if a in _WITH_VALUE:
            if a == "-c" and i + 1 < len(argv):
                configs.append(argv[i + 1])
            i += 2
        elif key in _WITH_VALUE or key in _FLAGS:
            i += 1
        elif a.startswith("-c") and not a.startswith("--"):
            configs.append(a[2:])
            i += 1
        elif a.startswith("-C") and not a.startswith("--"):
            i += 1
        elif a.startswith("-"):
            return GitLine(0, tuple(configs), a)
        else:
            return GitLine(i, tuple(configs))
    return GitLine(0, tuple(configs))
