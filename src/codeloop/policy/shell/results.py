"""What shell analysis reports: the simple commands a line would run, and its problems."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class ExecForm:
    """Arguments that make a command do more than its name says (`git rebase -x` runs a
    program, `find -delete` deletes): an allow rule admits the command only when its own
    words name one of `names`; with no names, only a wildcard-free rule does."""

    what: str  # how the user would spell it: `git rebase -x`
    why: str  # what it does: "runs a command after each commit"
    names: tuple[str, ...] = ()
    example: str = ""  # a rule that would admit it: run(git rebase -x *)


@dataclass(frozen=True)
class SimpleCommand:
    """One command that would run: `argv` is the real program and its arguments after
    wrappers (`env`, `timeout`, `xargs`, …) are peeled off; `full` keeps the wrappers."""

    argv: tuple[str, ...]
    full: tuple[str, ...]
    inline_code: str = ""
    forms: tuple[ExecForm, ...] = ()

    @property
    def name(self) -> str:
        """The program's base name: `/usr/bin/curl` is `curl`."""
        return self.argv[0].rsplit("/", 1)[-1]

    @property
    def text(self) -> str:
        return " ".join(self.argv)


@dataclass
class ShellAnalysis:
    """All the simple commands found, plus every reason the line could not be followed."""

    source: str
    commands: list[SimpleCommand] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    redirect_targets: list[str] = field(default_factory=list)

    @property
    def analysable(self) -> bool:
        return not self.problems
