"""Recording one simple command: assignments and wrappers peeled off, and the code it runs
itself (`bash -c`, `python -c`, `find -exec`, `su -c`, …) followed or reported."""

from __future__ import annotations

from collections.abc import Callable

from codeloop.policy.exec_vectors import exec_env_problem, hidden_exec_problem
from codeloop.policy.shell.results import ShellAnalysis, SimpleCommand
from codeloop.policy.shell.words import Word
from codeloop.policy.shell.wrappers import WRAPPERS, unwrap

# Parses a script into the analysis at a nesting depth. The parser passes its entry point in:
# it calls this module for every command it finishes, so this module cannot import it.
ParseScript = Callable[[str, ShellAnalysis, int], None]

_SHELLS = {"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish", "csh", "tcsh"}
_INTERPRETERS = {"python", "python2", "python3", "node", "nodejs", "perl", "ruby", "php", "lua", "deno", "bun"}
_INLINE_CODE_FLAGS = {"-c", "-e", "-E", "--eval", "-r", "--command"}
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
    problem = exec_env_problem(assignments) if assignments else None
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
        problem = exec_env_problem(argv[1: len(argv) - len(inner)]) if name == "env" else None
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
    hidden = hidden_exec_problem(name, argv, inline)
    if hidden:
        out.problems.append(hidden)
    out.commands.append(SimpleCommand(tuple(argv), full, inline))


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
                record_command(out, words[i + 1:j], [], depth, parse)
            i = j
        i += 1

