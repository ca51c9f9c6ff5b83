"""Ways a command can start another program that its argv does not show: environment
variables that name a program, options that take a command, inline code that spawns
processes. Each is reported as a problem, so the engine asks instead of matching rules."""

from __future__ import annotations

import re

# Variables that make the program (or the shell, or git) run something else.
EXEC_ENV = frozenset({
    "GIT_SSH_COMMAND", "GIT_SSH", "GIT_EXTERNAL_DIFF", "GIT_PAGER", "GIT_EDITOR",
    "GIT_SEQUENCE_EDITOR", "GIT_ASKPASS", "SSH_ASKPASS", "GIT_PROXY_COMMAND",
    "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT", "GIT_EXEC_PATH", "PAGER", "MANPAGER", "EDITOR",
    "VISUAL", "BROWSER", "LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "BASH_ENV", "ENV",
    "PROMPT_COMMAND", "PERL5OPT", "PERL5LIB", "RUBYOPT", "NODE_OPTIONS", "PYTHONSTARTUP",
    "PYTHONINSPECT", "PYTHONWARNINGS", "PATH", "IFS", "SHELLOPTS", "BASHOPTS", "PS4",
})
_GIT_EXEC_KEYS = re.compile(
    r"^(?:alias\.[^=]*=\s*!|core\.(?:sshcommand|pager|fsmonitor|editor|hookspath|askpass|gitproxy)="
    r"|diff\.[^=]*\.(?:textconv|command)=|diff\.external=|merge\.[^=]*\.driver=|filter\.[^=]*="
    r"|credential\.[^=]*helper=|sequence\.editor=|gpg\.[^=]*program=|uploadpack\.|receivepack\."
    r"|protocol\.[^=]*allow=always|include\.|includeif\.|remote\.[^=]*\.(?:uploadpack|receivepack)=)",
    re.I,
)
# program -> option spellings (exact, or prefix with `=`/attached value) that run a command
_EXEC_OPTIONS: dict[str, tuple[str, ...]] = {
    "tar": ("--to-command", "--checkpoint-action", "--use-compress-program", "-I",
            "--info-script", "--new-volume-script", "-F", "--rsh-command"),
    "rsync": ("-e", "--rsh", "--rsync-path"),
    "zip": ("-TT", "--unzip-command"),
    "script": ("-c", "--command"),
    "gdb": ("-ex", "--eval-command", "-x", "--command"),
    "vim": ("-c", "--cmd", "-S", "+"),
    "vi": ("-c", "--cmd", "-S", "+"),
    "nvim": ("-c", "--cmd", "-S", "+"),
    "less": ("+!",),
    "git": ("--exec-path", "--config-env", "--upload-pack", "--receive-pack"),
    "man": ("-P", "--pager", "-H", "--html"),
    "dpkg": ("--pre-invoke", "--post-invoke"),
}
_SPAWN_CODE = re.compile(
    r"\b(?:system|exec|execSync|execFile|execv\w*|spawn\w*|popen|Popen|subprocess|child_process|"
    r"shell_exec|passthru|proc_open|qx|Open3|pty|eval|__import__|importlib|__builtins__|builtins|"
    r"ctypes|os\.exec\w*)\b|getattr\s*\(\s*(?:os|subprocess|sys)\b|`|%x\{"
)
_AWK_SPAWN = re.compile(r"\bsystem\s*\(|\|\s*getline|\bprint[^;}]*\|\s*\"|\|&")
_SED_EXEC = re.compile(r"(?:^|[;\n{])\s*e(?:\s|$|;)|s([^\w\s\\]).*?\1.*?\1[gpiImM0-9w]*e")


def exec_env_problem(words: list[str]) -> str | None:
    """A problem if an assignment in `words` names a variable that runs a program."""
    for word in words:
        name = word.split("=", 1)[0].rstrip("+")
        if "=" in word and name in EXEC_ENV:
            return f"setting {name} can make the command run another program"
    return None


def hidden_exec_problem(name: str, argv: tuple[str, ...] | list[str], inline: str) -> str | None:
    """A problem if this command runs programs its argv does not name."""
    args = list(argv[1:])
    if inline and _SPAWN_CODE.search(inline):
        return f"inline `{name}` code starts processes or evaluates code"
    awk_file = any(a.startswith("-f") or a == "--file" for a in args)
    if name in ("awk", "gawk", "mawk", "nawk") and (awk_file or any(_AWK_SPAWN.search(a) for a in args)):
        return f"`{name}` program runs commands (or is read from a file)"
    if name in ("sed", "gsed") and any(_SED_EXEC.search(a) for a in args if not a.startswith("-")):
        return f"`{name}` script uses the `e` command, which runs commands"
    if name == "ssh" and any(a.lower().removeprefix("-o").lstrip().startswith(
            ("proxycommand", "localcommand", "permitlocalcommand")) for a in args):
        return "`ssh -o ProxyCommand/LocalCommand` runs another program"
    if name == "git":
        for i, a in enumerate(args):
            value = args[i + 1] if a == "-c" and i + 1 < len(args) else (a[2:] if a.startswith("-c") else "")
            if value and _GIT_EXEC_KEYS.match(value):
                return f"`git -c {value.split('=', 1)[0]}` can run another program"
    for option in _EXEC_OPTIONS.get(name, ()):
        for a in args:
            if a == option or a.startswith(option + "=") or (
                    option.startswith("+") and a.startswith(option)) or (
                    len(option) == 2 and a.startswith(option) and not a.startswith("--")):
                return f"`{name} {option}` runs another program"
    return None
