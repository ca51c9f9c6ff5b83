"""Command lines that change how a later name resolves or what a program loads: bash's
command hash (`BASH_CMDS[ls]=/bin/sh`), `PATH=`, `LD_PRELOAD`, `GIT_*`, `hash -p`, function
definitions, `git config alias.x '!sh'`, a write into `.git/config`. No allow rule admits
such a line: each is reported as a problem, which the engine asks about."""

from __future__ import annotations

import re

from codeloop.policy.exec_vectors import git_exec_key
from codeloop.policy.git_args import split_git

# Variables that make the program (or the shell, or git) run or load something else.
_EXEC_ENV = frozenset({
    "GIT_SSH", "GIT_EXTERNAL_DIFF", "GIT_PROXY_COMMAND", "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_COUNT", "GIT_EXEC_PATH", "BROWSER", "BASH_ENV", "ENV", "PROMPT_COMMAND",
    "PERL5OPT", "PERL5LIB", "PERLLIB", "PERL5DB", "RUBYOPT", "RUBYLIB", "NODE_OPTIONS",
    "NODE_PATH", "PYTHONSTARTUP", "PYTHONINSPECT", "PYTHONWARNINGS", "PYTHONPATH", "PYTHONHOME",
    "PYTHONUSERBASE", "PYTHONBREAKPOINT", "PYTEST_ADDOPTS", "PYTEST_PLUGINS", "PATH", "IFS",
    "SHELLOPTS", "BASHOPTS", "PS0", "PS1", "PS2", "PS3", "PS4", "BASH_CMDS", "BASH_ALIASES",
    "BASH_LOADABLES_PATH", "EXECIGNORE", "HOME", "XDG_CONFIG_HOME", "SHELL", "TAR_OPTIONS",
    "ZIPOPT", "LESS", "LESSOPEN", "LESSCLOSE", "LESSKEY", "LESSKEYIN", "MANOPT", "MAKEFLAGS",
    "MAKEFILES", "GNUMAKEFLAGS", "MFLAGS", "RUSTC_WRAPPER", "RUSTC_WORKSPACE_WRAPPER", "RUSTC",
    "RUSTDOC", "CARGO_HOME", "CARGO_BUILD_RUSTC_WRAPPER", "CARGO_BUILD_RUSTC", "GOFLAGS",
    "GOENV", "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS", "MAVEN_OPTS",
    "GRADLE_OPTS", "PHPRC", "PHP_INI_SCAN_DIR", "LUA_INIT", "LUA_PATH", "LUA_CPATH",
    "R_PROFILE", "R_PROFILE_USER", "GCONV_PATH",
})
_EXEC_ENV_PREFIXES = ("LD_", "DYLD_", "BASH_FUNC_", "NPM_CONFIG_", "YARN_", "GIT_CONFIG",
                      "LUA_INIT_")
_EXEC_ENV_SUFFIXES = ("PAGER", "EDITOR", "ASKPASS", "_SSH", "_SSH_COMMAND", "_RSH")
# git's own variables mostly redirect what git reads or runs; these only label or trace.
_HARMLESS_GIT_ENV = re.compile(
    r"^GIT_(?:(?:AUTHOR|COMMITTER)_(?:NAME|EMAIL|DATE)|TERMINAL_PROMPT|TRACE\w*|MERGE_AUTOEDIT|"
    r"OPTIONAL_LOCKS|FLUSH|PROGRESS_DELAY|(?:LITERAL|GLOB|NOGLOB|ICASE)_PATHSPECS|ADVICE)$")
# Builtins whose arguments are variable names they assign.
_ASSIGNING = {"export", "declare", "typeset", "local", "readonly"}
_NAMING = {"read", "mapfile", "readarray", "getopts", "unset", "printf"}
_RISKY_SHOPT = {"expand_aliases", "extdebug", "sourcepath"}
# Configuration other programs load and obey (hooks, aliases, pagers, startup code).
_LOADED_CONFIG = re.compile(
    r"(?:^|/)(?:\.git/(?:config|hooks(?:/|$)|info/|modules/)|\.gitconfig$|\.config/git/|"
    r"\.gitmodules$|\.bashrc$|\.bash_profile$|\.bash_login$|\.profile$|\.zshrc$|\.zshenv$|"
    r"\.npmrc$|\.yarnrc(?:\.yml)?$|pip\.conf$|\.pydistutils\.cfg$|sitecustomize\.py$|"
    r"usercustomize\.py$|[^/]*\.pth$|\.ssh/(?:config|rc)$|\.wgetrc$|\.curlrc$|\.lesskey$|"
    r"\.vimrc$|\.exrc$|\.gdbinit$|\.cargo/config(?:\.toml)?$)")
_WRITERS = {"tee", "cp", "mv", "ln", "install", "dd", "truncate", "rsync", "touch", "chmod"}
_ARITH_ASSIGN = re.compile(
    r"(?:\+\+|--)\s*([A-Za-z_]\w*)|([A-Za-z_]\w*)(?:\[[^\]]*\])?\s*"
    r"(?:\+\+|--|(?:[-+*/%&|^]|<<|>>)?=(?!=))")
_PARAM_ASSIGN = re.compile(r"^\s*([A-Za-z_]\w*)(?:\[[^\]]*\])?\s*:?=")
_LITERAL_SUBST = re.compile(r"\$\((?!\.\.\.\)|\(\.\.\.\)\))|`|\$\[")


def sensitive(name: str) -> bool:
    """Whether assigning variable `name` can change what a command runs or loads."""
    name = name.split("[", 1)[0].rstrip("+")
    upper = name.upper()
    if name in _EXEC_ENV or upper.startswith(_EXEC_ENV_PREFIXES) or upper.endswith(
            _EXEC_ENV_SUFFIXES):
        return True
    if upper.startswith("CARGO_TARGET_") and upper.endswith("_RUNNER"):
        return True
    return upper.startswith("GIT_") and not _HARMLESS_GIT_ENV.match(upper)


def assignment_problem(words: list[str]) -> str | None:
    """A problem if an assignment in `words` sets a variable that changes what runs, or
    stores text with a command substitution that arithmetic or `${x@P}` would run later."""
    for word in words:
        if "=" not in word:
            continue
        name, value = word.split("=", 1)
        if sensitive(name):
            return f"setting {name.split('[', 1)[0].rstrip('+')} can make a command run or " \
                   "load another program"
        if _LITERAL_SUBST.search(value):
            return f"{name} holds command-substitution text, which arithmetic or `${{…@P}}` " \
                   "would run"
    return None


def command_problem(name: str, argv: list[str]) -> str | None:
    """A problem if this command changes how later names resolve, what variables hold, or
    the configuration a tool obeys next time (`git config alias.x '!sh'`, `go env -w`)."""
    args = list(argv[1:])
    if name == "git":
        line = split_git(argv)
        if line.sub(argv) == "config":
            return _git_config_problem(list(argv[line.at + 1:]))
        return None
    if name in ("npm", "pnpm", "yarn") and any(a in ("config", "c") for a in args) and any(
            a in ("set", "edit", "delete", "rm") for a in args):
        return f"`{name} config set` changes what later {name} commands run"
    if name == "go" and "env" in args and any(a in ("-w", "-u") for a in args):
        return "`go env -w` changes how later go commands build and run"
    return _builtin_problem(name, args)


def _builtin_problem(name: str, args: list[str]) -> str | None:
    options = [a for a in args if a.startswith("-")]
    operands = [a for a in args if not a.startswith("-")]
    if name in _ASSIGNING:
        if any("n" in o[1:] for o in options if not o.startswith("--")):
            return f"`{name} -n` makes a name refer to another variable"
        return assignment_problem([a for a in operands if "=" in a]) or _named(name, [
            a for a in operands if "=" not in a and name != "export"])
    if name in _NAMING:
        if name in ("mapfile", "readarray") and any(o.startswith("-C") for o in options):
            return f"`{name} -C` runs a callback"
        if name == "printf":
            return _named(name, [args[i + 1] for i, a in enumerate(args[:-1]) if a == "-v"]
                          + [a[2:] for a in args if a.startswith("-v") and len(a) > 2])
        return _named(name, operands)
    if name == "hash" and any(o.startswith("-") and "p" in o for o in options):
        return "`hash -p` binds a command name to another program"
    if name == "let":
        return arithmetic_problem(" ".join(args))
    if name == "enable":
        return "`enable` changes which builtins exist (and `-f` loads a library)"
    if name in ("compgen", "complete") and any(o in ("-C", "-F") for o in options):
        return f"`{name} -C/-F` runs a command"
    if name == "fc":
        return "`fc` re-runs commands from the history"
    if name == "shopt" and "-s" in options and any(a in _RISKY_SHOPT for a in operands):
        return "`shopt -s` changes how command names are resolved"
    return None


def _named(name: str, targets: list[str]) -> str | None:
    for target in targets:
        if sensitive(target):
            return f"`{name}` changes {target.split('[', 1)[0]}, which decides what commands run"
    return None


def arithmetic_problem(body: str) -> str | None:
    """A problem if an arithmetic body assigns a variable that changes what runs."""
    for m in _ARITH_ASSIGN.finditer(body):
        name = m.group(1) or m.group(2)
        if sensitive(name):
            return f"arithmetic assigns {name}, which decides what commands run"
    return None


def parameter_problem(inner: str) -> str | None:
    """A problem for `${NAME:=…}` on a sensitive name, or `${x@P}` (prompt expansion runs
    command substitutions)."""
    m = _PARAM_ASSIGN.match(inner)
    if m and sensitive(m.group(1)):
        return f"`${{{m.group(1)}:=…}}` assigns a variable that decides what commands run"
    if re.search(r"@P\s*$", inner):
        return "`${…@P}` expands text as a prompt, which runs command substitutions"
    return None


def loop_problem(variable: str) -> str | None:
    if sensitive(variable):
        return f"a loop assigns {variable}, which decides what commands run"
    return None


def config_write_problem(program: str, argv: list[str], redirects: list[str]) -> str | None:
    """A problem if the line writes a file that git, a shell or a package tool loads."""
    targets = list(redirects)
    if program in _WRITERS or (program in ("sed", "perl") and any(
            a.startswith(("-i", "--in-place")) for a in argv)):
        targets += [a.split("=", 1)[1] if a.startswith("of=") else a for a in argv[1:]]
    for target in targets:
        if _LOADED_CONFIG.search(target.replace("\\", "/")):
            return f"writes {target}, which other programs load and obey"
    return None


def _git_config_problem(args: list[str]) -> str | None:
    """`git config KEY VALUE` on a key that runs programs changes every later git command."""
    operands = [a for a in args if not a.startswith("-")]
    if operands[:1] == ["set"]:
        operands = operands[1:]
    for i, key in enumerate(operands[:-1]):
        if git_exec_key(f"{key}={operands[i + 1]}"):
            return f"`git config {key}` makes later git commands run another program"
    return None
