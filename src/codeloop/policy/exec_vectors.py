"""Ways a command can start a program hidden in a string its argv carries: options whose
value is a command (`tar --to-command`, `ssh -o ProxyCommand`), git configuration that runs
programs, inline code that spawns processes, `sed`'s `e`, `awk`'s `system()`. Each is a
problem, so the engine asks whatever the rules say (no rule can name a string's contents)."""

from __future__ import annotations

import re

from codeloop.policy.git_args import split_git

_GIT_EXEC_KEY = re.compile(
    r"^\s*(?:(?:alias|core|filter|credential|gpg|uploadpack|receivepack|include|includeif|"
    r"difftool|mergetool|man|browser|pager|hook|trailer|sendemail|instaweb|lfs|safe)\."
    r"|(?:diff\.external|diff\.[^=]*\.(?:textconv|command)|merge\.[^=]*\.driver|sequence\.editor"
    r"|remote\.[^=]*\.(?:uploadpack|receivepack|vcs)|protocol\.(?:[^=]*\.)?allow|web\.browser"
    r"|ssh\.variant|submodule\.[^=]*\.update|interactive\.difffilter|log\.showsignature"
    r"|(?:commit|tag|push)\.gpgsign|merge\.verifysignatures)\s*(?:=|$))",
    re.I,
)
# program -> option spellings (exact, `=value`, or attached value) whose value is a command
_EXEC_OPTIONS: dict[str, tuple[str, ...]] = {
    "tar": ("--to-command", "--checkpoint-action", "--use-compress-program", "-I",
            "--info-script", "--new-volume-script", "-F", "--rsh-command", "--rmt-command"),
    "rsync": ("-e", "--rsh", "--rsync-path"),
    "zip": ("-TT", "--unzip-command"),
    "script": ("-c", "--command"),
    "gdb": ("-ex", "--eval-command", "-x", "--command", "-iex", "-ix", "--init-command",
            "--init-eval-command"),
    "vim": ("-c", "--cmd", "-S", "-s", "+"),
    "less": ("+!",),
    "git": ("--upload-pack", "--receive-pack"),
    "man": ("-P", "--pager", "-H", "--html"),
    "dpkg": ("--pre-invoke", "--post-invoke"),
    "sort": ("--compress-program",),
    "split": ("--filter",),
    "ssh": ("-F", "-I"),
    "scp": ("-S", "-F"),
    "sftp": ("-S", "-D", "-F"),
    "emacs": ("--eval", "-l", "--load", "-f", "--funcall", "--script", "-x"),
    "nc": ("-e", "-c", "--exec", "--sh-exec", "--lua-exec"),
    "npm": ("--script-shell", "--node-options", "--userconfig", "--globalconfig", "--init-module",
            "--shell", "--editor", "--browser", "--viewer", "--git", "--call", "-c"),
    "cargo": ("--config",),
}
for _alias, _same in (("vi", "vim"), ("nvim", "vim"), ("view", "vim"), ("vimdiff", "vim"),
                      ("ex", "vim"), ("gvim", "vim"), ("ncat", "nc"), ("netcat", "nc"),
                      ("pnpm", "npm"), ("yarn", "npm")):
    _EXEC_OPTIONS[_alias] = _EXEC_OPTIONS[_same]
# git subcommand -> its options whose value is a command
_GIT_SUB_OPTIONS: dict[str, tuple[str, ...]] = {
    "clone": ("-u",), "ls-remote": ("-u", "--exec"), "archive": ("--exec",),
    "grep": ("-O", "--open-files-in-pager"),
    "send-email": ("--to-cmd", "--cc-cmd", "--header-cmd", "--sendmail-cmd", "--smtp-server"),
}
# program -> short-option letters that take a command, also inside a bundle (`rsync -avze`)
_BUNDLED = {"tar": "IF", "rsync": "e", "script": "c", "ssh": "FI", "scp": "SF", "sftp": "SDF",
            "man": "PH", "nc": "ec", "ncat": "ec", "netcat": "ec"}
# Real long options that are prefixes of an exec option (not abbreviations of it).
_EXACT_LONG = {"tar": {"--checkpoint"}}
_ALWAYS = {"parallel": "`parallel` runs its command through a shell with its input in it"}
_SSH_OPTIONS = ("proxycommand", "localcommand", "permitlocalcommand", "knownhostscommand",
                "include", "match", "pkcs11provider", "securitykeyprovider")
_SPAWN_CODE = re.compile(
    r"\b(?:system|exec|execSync|execFile|execv\w*|spawn\w*|popen|Popen|subprocess|child_process|"
    r"shell_exec|passthru|proc_open|qx|Open3|pty|eval|__import__|importlib|__builtins__|builtins|"
    r"ctypes|os\.exec\w*)\b|getattr\s*\(\s*(?:os|subprocess|sys)\b|`|%x\{"
)
_AWK_SPAWN = re.compile(r"\bsystem\s*\(|\|\s*getline|\|&|@(?:load|include)\b|@[A-Za-z_]\w*\s*\("
                        r"|\bprintf?\b[^;}\n]*\|")
_AWK_FILE_OPTIONS = ("-f", "--file", "-i", "--include", "-l", "--load", "-E", "--exec", "-W")
# sed's `e` command after any address (`1e`, `$e`, `/x/e`, `1!e`), and the `s///e` flag
_SED_E_COMMAND = re.compile(r"(?:^|[;\n{}!0-9$/,~\s])e(?:\s|$|;|})")
_SED_E_FLAG = re.compile(r"s([^\w\s\\]).*?\1.*?\1[gpiImM0-9w]*e")


def option_matches(arg: str, option: str, program: str = "") -> bool:
    """Whether `arg` spells `option`: exactly, with `=value`, with a short option's value
    attached (`-xcmd`), or as an abbreviation of a long option, which getopt_long and git
    both accept (`--to-com=sh` is `--to-command=sh`)."""
    key = arg.split("=", 1)[0]
    if key == option or (option.startswith("+") and arg.startswith(option)):
        return True
    if len(option) == 2 and option[0] == "-" and arg.startswith(option) and not arg.startswith("--"):
        return True
    return option.startswith("--") and key.startswith("--") and len(key) >= 3 and \
        option.startswith(key) and key not in _EXACT_LONG.get(program, ())


def exec_capable(name: str) -> bool:
    """Whether `name` has options that run a program (so a run-time word could be one)."""
    return name in _EXEC_OPTIONS or name in _BUNDLED or name in _ALWAYS or name in (
        "ssh", "scp", "sftp", "sed", "gsed", "awk", "gawk", "mawk", "nawk")


def git_exec_key(setting: str) -> bool:
    """Whether a git `key=value` setting can make git run another program."""
    return _GIT_EXEC_KEY.match(setting) is not None


def hidden_exec_problem(name: str, argv: tuple[str, ...] | list[str], inline: str) -> str | None:
    """A problem if this command runs programs its argv does not name."""
    args = list(argv[1:])
    if inline and _SPAWN_CODE.search(inline):
        return f"inline `{name}` code starts processes or evaluates code"
    if name in _ALWAYS:
        return _ALWAYS[name]
    if name in ("awk", "gawk", "mawk", "nawk") and any(
            a.startswith(_AWK_FILE_OPTIONS) or _AWK_SPAWN.search(a) for a in args):
        return f"`{name}` program runs commands (or is read from a file)"
    if name in ("sed", "gsed"):
        return _sed_problem(name, args)
    if name in ("ssh", "scp", "sftp") and any(a.lower().removeprefix("-o").lstrip().startswith(
            _SSH_OPTIONS) for a in args):
        return f"`{name} -o ProxyCommand/LocalCommand/Include` runs another program"
    if name == "git":
        problem = _git_problem(list(argv))
        if problem:
            return problem
    if name == "tar" and args and not args[0].startswith("-") and set(args[0]) & set("IF"):
        return f"`tar {args[0]}` takes a program to run"  # old-style bundled options
    return _option_problem(name, args, _EXEC_OPTIONS.get(name, ()), _BUNDLED.get(name, ""))


def _option_problem(name: str, args: list[str], options: tuple[str, ...],
                    letters: str) -> str | None:
    for option in options:
        for a in args:
            if option_matches(a, option, name):
                return f"`{name} {option}` runs another program"
    for a in args:
        if re.fullmatch(r"-[A-Za-z0-9]{2,}", a) and set(a[1:]) & set(letters):
            return f"`{name} {a}` takes a program to run"
    return None


def _git_problem(argv: list[str]) -> str | None:
    line = split_git(argv)
    for value in line.configs:
        if git_exec_key(value):
            return f"`git -c {value.split('=', 1)[0]}` can run another program"
    for a in argv[1:line.at or len(argv)]:  # git's own options, before the subcommand
        if a.startswith(("--exec-path=", "--config-env")):
            return f"`git {a.split('=', 1)[0]}` makes git run other programs"
    sub = line.sub(argv)
    return _option_problem(f"git {sub}", argv[line.at + 1:] if line.at else [],
                           _GIT_SUB_OPTIONS.get(sub, ()), "")


def _sed_problem(name: str, args: list[str]) -> str | None:
    scripts: list[str] = []
    for i, a in enumerate(args):
        if a == "-f" or option_matches(a, "--file") or (
                re.fullmatch(r"-[a-zA-Z]+", a) and "f" in a):
            return f"`{name}` reads its script from a file"
        if a == "-e" or (a.startswith("--") and "=" not in a and option_matches(a, "--expression")):
            scripts.append(args[i + 1] if i + 1 < len(args) else "")
        elif a.startswith("--") and "=" in a and option_matches(a, "--expression"):
            scripts.append(a.split("=", 1)[1])
        elif a.startswith("-") and not a.startswith("--") and "e" in a[1:]:
            attached = a[a.index("e", 1) + 1:]
            scripts.append(attached or (args[i + 1] if i + 1 < len(args) else ""))
        elif not a.startswith("-"):
            scripts.append(a)  # the script, or a file name: checking both is the safe side
    if any(_SED_E_COMMAND.search(s) or _SED_E_FLAG.search(s) for s in scripts):
        return f"`{name}` script uses the `e` command, which runs commands"
    return None
