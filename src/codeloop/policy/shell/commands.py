"""Recording one simple command: assignments and wrappers peeled off, and the code it runs
itself (`bash -c`, `python -c`, `find -exec`, `su -c`, …) followed or reported."""

from __future__ import annotations

import re
from collections.abc import Callable

from codeloop.policy.exec_forms import exec_forms
from codeloop.policy.exec_vectors import hidden_exec_problem, option_matches
from codeloop.policy.git_args import split_git
from codeloop.policy.shell.results import ExecForm, ShellAnalysis, SimpleCommand
from codeloop.policy.shell.words import Word
from codeloop.policy.shell.wrappers import WRAPPERS, unwrap
from codeloop.policy.state_changes import assignment_problem, command_problem, config_write_problem

# Parses a script into the analysis at a nesting depth. The parser passes its entry point in:
# it calls this module for every command it finishes, so this module cannot import it.
ParseScript = Callable[[str, ShellAnalysis, int], None]

_SHELLS = {"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish", "csh", "tcsh"}
_INTERPRETERS = {"python", "python2", "python3", "node", "nodejs", "perl", "ruby", "php", "lua", "deno", "bun"}
_INLINE_CODE_FLAGS = {"-c", "-e", "-E", "--eval", "-r", "--command"}
_GLOB = re.compile(r"[*?\[]|\{[^}]*(?:,|\.\.)[^}]*\}")
# git subcommand -> options whose value git runs as shell code
_GIT_SCRIPT_OPTIONS: dict[str, tuple[str, ...]] = {
    "rebase": ("-x", "--exec"),
    "difftool": ("-x", "--extcmd"),
    "filter-branch": ("--env-filter", "--tree-filter", "--index-filter", "--parent-filter",
                      "--msg-filter", "--commit-filter", "--tag-name-filter"),
}
_PRIVILEGED = {"sudo", "doas", "chroot"}  # wrappers whose command runs with other rights
_UNFOLLOWABLE = {
    "eval": "`eval` runs a string built at run time",
    "trap": "`trap` runs a string later",
    "coproc": "`coproc` is not analysed",
    "case": "`case` statements are not analysed",
    "alias": "`alias` redefines commands",
}


def _shell_script_arg(argv: list[str]) -> tuple[int, bool, str]:
    """For `sh`-like argv: (index of the -c string or 0, reads-stdin, problem)."""
    i = 1
    while i < len(argv):
        a = argv[i]
        if a == "--":
            i += 1
            break
        if (a.startswith("-") and len(a) > 1) or a.startswith("+"):
            letters = a.lstrip("-+")
            if a.startswith("--"):
                if a in ("--rcfile", "--init-file"):
                    i += 2
                    continue
                i += 1
                continue
            if "c" in letters:
                script_at = i + 1
                if "o" in letters or "O" in letters:
                    script_at += 1
                if script_at >= len(argv):
                    return 0, False, "`-c` without a script"
                return script_at, False, ""
            if "s" in letters:
                return 0, True, ""
            if letters in ("o", "O"):
                i += 2
                continue
            i += 1
            continue
        break
    if i >= len(argv) or argv[i] in ("-", "/dev/stdin", "/proc/self/fd/0", "/dev/fd/0"):
        return 0, True, ""
    return 0, False, ""


def record_command(out: ShellAnalysis, words: list[Word], outer: list[str], depth: int,
                   parse: ParseScript) -> None:
    """Record one simple command (peeling assignments and wrappers), recursing into
    `bash -c` strings and `find -exec` commands."""
    assignments: list[str] = []
    while words and words[0].assignment:
        assignments.append(words[0].value)
        words = words[1:]
    problem = assignment_problem(assignments) if assignments else None
    if problem:
        out.problems.append(problem)
    if not words:
        if outer:
            out.commands.append(SimpleCommand(tuple(outer), tuple(outer)))
        return
    head = words[0]
    if head.expanded:
        out.problems.append(f"the command name comes from an expansion (`{head.value}`)")
        return
    if head.globbed and head.value not in ("[", "[["):
        out.problems.append(f"the command name is a glob pattern (`{head.value}`)")
        return
    argv = [w.value for w in words]
    name = argv[0].rsplit("/", 1)[-1]
    if name in _UNFOLLOWABLE:
        out.problems.append(_UNFOLLOWABLE[name])
        return
    if name in WRAPPERS or name == "env":
        inner, problem = unwrap(argv)
        if inner is None:
            out.problems.append(problem)
            return
        if not inner:
            full = (*outer, *argv)
            out.commands.append(SimpleCommand(tuple(argv), full))
            return
        rest = words[len(words) - len(inner):]
        problem = assignment_problem(argv[1: len(argv) - len(inner)]) if name == "env" else (
            _xargs_problem(argv[: len(argv) - len(inner)], inner) if name == "xargs" else None)
        if problem:
            out.problems.append(problem)
        if name == "watch":
            _follow_string(out, " ".join(w.value for w in rest), rest, depth, f"`{name}`", parse)
            return
        record_command(out, rest, [*outer, *argv[: len(argv) - len(inner)]], depth, parse)
        return
    full = (*outer, *argv)
    inline = ""
    if name in _SHELLS:
        script_at, stdin, problem = _shell_script_arg(argv)
        if problem:
            out.problems.append(problem)
        elif stdin:
            out.problems.append(f"`{name}` reads its script from standard input")
        elif script_at:
            _follow_string(out, argv[script_at], [words[script_at]], depth, f"`{name} -c`", parse)
    elif name.rstrip("0123456789.") in _INTERPRETERS:
        inline, stdin = _interpreter_code(argv)
        if stdin:
            out.problems.append(f"`{name}` reads its program from standard input")
    elif name == "find":
        _find_exec(out, words, depth, parse)
    elif name in ("source", ".") and (
            len(argv) < 2 or argv[1] in ("/dev/stdin", "-", "/proc/self/fd/0") or words[1].expanded):
        out.problems.append("`source` of standard input or of an expansion")
    elif name in ("su", "runuser") and "-c" in argv:
        at = argv.index("-c") + 1
        if at < len(argv):
            _follow_string(out, argv[at], [words[at]], depth, f"`{name} -c`", parse)
    elif name == "git":
        _git_commands(out, words, depth, parse)
    for problem in (hidden_exec_problem(name, argv, inline), command_problem(name, argv),
                    config_write_problem(name, argv, [])):
        if problem:
            out.problems.append(problem)
    out.commands.append(SimpleCommand(tuple(argv), full, inline, _forms(name, words, outer)))


def _forms(name: str, words: list[Word], outer: list[str]) -> tuple[ExecForm, ...]:
    """The command's exec forms; under `xargs` its arguments also come from the input."""
    dynamic = frozenset(i for i, w in enumerate(words) if i and (w.expanded or (
        w.globbed and _GLOB.search(w.value))))
    forms = exec_forms(name, [w.value for w in words], dynamic)
    wrappers = {w.rsplit("/", 1)[-1] for w in outer}
    if "xargs" in wrappers:
        forms.append(ExecForm("`xargs`", "adds arguments it reads from its input, which may "
                              "be options", ("xargs",), f"run(xargs {name} *)"))
    for wrapper in sorted(wrappers & _PRIVILEGED):
        forms.append(ExecForm(f"`{wrapper}`", "runs it as another user or in another root",
                              (wrapper,), f"run({wrapper} {name} *)"))
    return tuple(forms)


def _xargs_problem(head: list[str], inner: list[str]) -> str | None:
    """`xargs -I{} sh -c '… {} …'` puts each input line into shell code."""
    replaces = any(a.startswith(("-I", "-i", "--replace")) for a in head[1:])
    runs_code = inner[0].rsplit("/", 1)[-1] in _SHELLS | _INTERPRETERS
    return "`xargs -I` puts its input into a shell or interpreter's code" if (
        replaces and runs_code) else None


def _git_commands(out: ShellAnalysis, words: list[Word], depth: int, parse: ParseScript) -> None:
    """The commands git runs for `rebase -x`, `bisect run`, `submodule foreach`,
    `difftool -x` and `filter-branch` filters: followed like `bash -c`."""
    argv = [w.value for w in words]
    line = split_git(argv)
    sub, at = line.sub(argv), line.at
    if not at:
        return
    if sub == "bisect" and argv[at + 1: at + 2] == ["run"] and len(words) > at + 2:
        record_command(out, words[at + 2:], [], depth + 1, parse)
        return
    if sub == "submodule" and "foreach" in argv[at + 1:]:
        k = argv.index("foreach", at + 1) + 1
        rest = words[k:]
        if rest:
            _follow_string(out, " ".join(w.value for w in rest), rest, depth,
                           "`git submodule foreach`", parse)
        return
    options = _GIT_SCRIPT_OPTIONS.get(sub, ())
    letters = "".join(o[1] for o in options if len(o) == 2)
    for i in range(at + 1, len(words)):
        a = argv[i]
        if a.startswith("--"):
            if not any(option_matches(a, o) for o in options):
                continue
            value, at_word = (a.split("=", 1)[1], i) if "=" in a else (None, i + 1)
        elif re.fullmatch(r"-[A-Za-z].*", a, re.S) and letters and (p := _first_of(a, letters)):
            value, at_word = (a[p + 1:], i) if a[p + 1:] else (None, i + 1)  # -x'cmd', -ix cmd
        else:
            continue
        if value is None and at_word < len(words):
            value = argv[at_word]
        if value is not None:
            _follow_string(out, value, [words[min(at_word, len(words) - 1)]], depth,
                           f"`git {sub} {a}`", parse)


def _first_of(arg: str, letters: str) -> int:
    """Index of the first of `letters` in a short-option bundle (0 if none)."""
    return next((k for k, c in enumerate(arg) if k and c in letters), 0)


def _follow_string(out: ShellAnalysis, script: str, words: list[Word], depth: int, what: str,
                   parse: ParseScript) -> None:
    if any(w.expanded for w in words):
        out.problems.append(f"{what} runs a string built from an expansion")
        return
    parse(script, out, depth + 1)


def _interpreter_code(argv: list[str]) -> tuple[str, bool]:
    """(inline program text, reads program from stdin) for python/node/perl/… argv."""
    for i, a in enumerate(argv[1:], start=1):
        if a in _INLINE_CODE_FLAGS or (a.startswith("-") and not a.startswith("--") and a[-1] in "ce" and len(a) <= 4):
            return (argv[i + 1] if i + 1 < len(argv) else ""), False
        if a == "-m":
            return "", False
        if a == "-":
            return "", True
        if not a.startswith("-"):
            return "", False
    return "", True


def _find_exec(out: ShellAnalysis, words: list[Word], depth: int, parse: ParseScript) -> None:
    i = 1
    while i < len(words):
        if words[i].value in ("-exec", "-execdir", "-ok", "-okdir"):
            j = i + 1
            while j < len(words) and words[j].value not in (";", "+"):
                j += 1
            if j >= len(words):
                out.problems.append("`find -exec` without a terminating `;` or `+`")
            if j > i + 1:
                inner = [w.value for w in words[i + 1:j]]
                if inner[0].rsplit("/", 1)[-1] in _SHELLS | _INTERPRETERS and any(
                        "{}" in a and a != "{}" for a in inner[1:]):
                    out.problems.append("`find -exec` puts file names into a shell or "
                                        "interpreter's code")
                record_command(out, words[i + 1:j], [], depth, parse)
            i = j
        i += 1

