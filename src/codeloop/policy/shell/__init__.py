"""Split a shell command line into the simple commands it would run, or say why it cannot.

Hand-written rather than `bashlex`: bashlex is GPLv3+ (we ship Apache-2.0), fails on common
syntax (`[[ … ]]`, array assignments) and throws away the distinction we need between
"parsed, and these are all the commands" and "could not follow this". `shlex` alone does not
see operators, substitutions or heredocs. This parser follows the bash grammar only as far as
policy needs: every place where code can run is found, and anything it cannot follow is
reported as a problem (which the engine turns into "ask"), never silently dropped.

`lexer` reads words and substitutions, `parser` commands and redirections, `commands` records
each simple command (following `bash -c` and the like), `wrappers` peels `env`, `timeout`, ….
"""

from __future__ import annotations

from codeloop.policy.shell.parser import Parser
from codeloop.policy.shell.results import ExecForm, ShellAnalysis, SimpleCommand
from codeloop.policy.state_changes import config_write_problem

__all__ = ["ExecForm", "ShellAnalysis", "SimpleCommand", "analyse"]

_MAX_LENGTH = 200_000


def analyse(command: str) -> ShellAnalysis:
    """Every simple command `command` would run, or the problems that stopped us."""
    out = ShellAnalysis(source=command)
    if "\x00" in command:
        out.problems.append("NUL byte in the command")
    if len(command) > _MAX_LENGTH:
        out.problems.append(f"command longer than {_MAX_LENGTH} characters; not analysed")
        return out
    Parser(command, out).parse()
    problem = config_write_problem("", [], out.redirect_targets)
    if problem:
        out.problems.append(problem)
    out.problems = list(dict.fromkeys(out.problems))
    return out
