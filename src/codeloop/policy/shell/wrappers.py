"""Wrappers: programs whose arguments are another command (`env`, `timeout`, `xargs`, …).

Their options are peeled off by a table per program, so the policy sees the command they run;
an option the table does not know means the wrapped command is unknown, and is a problem.
"""

from __future__ import annotations

from dataclasses import dataclass

from codeloop.policy.shell.words import ASSIGNMENT


@dataclass(frozen=True)
class _Wrapper:
    with_arg: frozenset[str] = frozenset()
    flags: frozenset[str] = frozenset()
    positionals: int = 0  # operands before the command (timeout's duration)


def _w(with_arg: str = "", flags: str = "", positionals: int = 0) -> _Wrapper:
    return _Wrapper(frozenset(with_arg.split()), frozenset(flags.split()), positionals)


WRAPPERS: dict[str, _Wrapper] = {
    "timeout": _w("-s --signal -k --kill-after", "--preserve-status --foreground -v --verbose", 1),
    "nice": _w("-n --adjustment"),
    "ionice": _w("-c -n -p -P -u --class --classdata", "-t --ignore"),
    "nohup": _w(),
    "setsid": _w("", "-c -f -w --ctty --fork --wait"),
    "stdbuf": _w("-i -o -e --input --output --error"),
    "time": _w("-f -o --format --output", "-p -a -v --portability --append --verbose"),
    "command": _w("", "-p"),
    "builtin": _w(),
    "exec": _w("-a", "-c -l"),
    "sudo": _w("-u -g -C -D -h -p -r -t -U -T --user --group --chdir --host --prompt",
               "-E -H -n -P -S -b -i -k -s --preserve-env --login --non-interactive --stdin --shell"),
    "doas": _w("-u -C", "-n -s"),
    "xargs": _w("-a -d -E -I -L -n -P -s --arg-file --delimiter --eof --max-lines --max-args "
                "--max-procs --max-chars --process-slot-var",
                "-0 -o -p -r -t -x --null --open-tty --interactive --no-run-if-empty --verbose --exit"),
    "busybox": _w(),
    "flock": _w("-w -E --timeout --conflict-exit-code", "-s -x -n -u -o -F --shared --exclusive "
                "--nonblock --unlock --close --no-fork", 1),
    "chroot": _w("--userspec --groups", "--skip-chdir", 1),
    "taskset": _w("", "-a -c -p --all-tasks --cpu-list --pid", 1),
    "unbuffer": _w(),
    "chronic": _w(),
    "torsocks": _w(),
    "proxychains": _w("-f", "-q"),
    "proxychains4": _w("-f", "-q"),
    "watch": _w("-n -d --interval --differences", "-t -b -e -g -c -x --no-title --beep --errexit --chgexit --color --exec"),
}


def _strip_options(name: str, spec: _Wrapper, args: list[str]) -> tuple[list[str] | None, str]:
    """Peel a wrapper's options; return (the wrapped argv, problem)."""
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            i += 1
            break
        if not a.startswith("-") or a == "-":
            break
        if a.startswith("--"):
            key = a.split("=", 1)[0]
            if key in spec.with_arg:
                i += 1 if "=" in a else 2
                continue
            if key in spec.flags:
                i += 1
                continue
            return None, f"cannot tell which command `{name}` runs (unknown option {a})"
        if a in spec.with_arg:
            i += 2
            continue
        if a[:2] in spec.with_arg:  # attached value: -n10, -oL
            i += 1
            continue
        if name in ("nice",) and a[1:].isdigit():
            i += 1
            continue
        if all(f"-{ch}" in spec.flags for ch in a[1:]):
            i += 1
            continue
        if name == "xargs" and a[:2] in ("-i", "-l", "-e"):  # optional attached argument forms
            i += 1
            continue
        return None, f"cannot tell which command `{name}` runs (unknown option {a})"
    rest = args[i:]
    if len(rest) < spec.positionals:
        return [], ""
    return rest[spec.positionals:], ""


def _strip_env(args: list[str]) -> tuple[list[str] | None, str]:
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("-i", "--ignore-environment", "-0", "--null", "-v", "--debug", "-"):
            i += 1
        elif a in ("-u", "--unset", "-C", "--chdir"):
            i += 2
        elif a.startswith(("--unset=", "--chdir=", "-u", "-C")) and a not in ("-u", "-C"):
            i += 1
        elif a.startswith(("-S", "--split-string")):
            return None, "`env -S` splits a string into a command; not analysed"
        elif a == "--":
            i += 1
            break
        elif a.startswith("-"):
            return None, f"cannot tell which command `env` runs (unknown option {a})"
        else:
            break
    while i < len(args) and ASSIGNMENT.match(args[i]):
        i += 1
    return args[i:], ""


def unwrap(argv: list[str]) -> tuple[list[str] | None, str]:
    """The command a wrapper runs: [] when it runs none, None when we cannot tell."""
    name = argv[0].rsplit("/", 1)[-1]
    if name == "env":
        return _strip_env(argv[1:])
    if name == "command" and any(a in ("-v", "-V") for a in argv[1:2]):
        return [], ""
    spec = WRAPPERS.get(name)
    assert spec is not None
    return _strip_options(name, spec, argv[1:])

