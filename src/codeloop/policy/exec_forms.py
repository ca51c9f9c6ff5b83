"""Arguments that make a command run another program (`git rebase -x`, `find -exec`,
`python -c`, `npm run`, `make`), write or delete files (`find -fprint`, `find -delete`), or
that are only known at run time (`git fetch $X`, `tar cf x *`). An allow rule admits such a
command only if the rule names the form (see `command_pattern.py`); the mode and deny rules
are as before.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from codeloop.policy.exec_vectors import exec_capable, option_matches
from codeloop.policy.git_args import split_git
from codeloop.policy.package_tools import PACKAGE_TOOLS, package_forms
from codeloop.policy.shell.results import ExecForm

_BUILD = "runs the commands of its build file"
_ALWAYS: dict[str, str] = {
    **dict.fromkeys(("make", "gmake", "bmake", "ninja", "just", "rake", "gradle", "gradlew",
                     "mvn", "mvnw", "ant", "sbt", "cmake", "meson", "bazel"), _BUILD),
    "source": "runs the commands of a file in this shell",
    ".": "runs the commands of a file in this shell",
    **dict.fromkeys(("npx", "bunx", "pnpx", "uvx"), "runs a package's program"),
}
# Harmless `git -c` keys: presentation and identity only.
_GIT_SAFE_CONFIG = re.compile(
    r"^(?:user\.|color\.|advice\.|i18n\.|init\.defaultbranch|log\.(?:decorate|date|abbrevcommit)"
    r"|diff\.(?:noprefix|algorithm|renames|mnemonicprefix|context|interhunkcontext|colormoved)"
    r"|merge\.conflictstyle|pull\.(?:rebase|ff)|format\.pretty|gc\.auto|protocol\.version"
    r"|column\.ui|status\.(?:short|branch|showuntrackedfiles)|blame\.date)",
    re.I,
)
# git subcommands with options that run programs: a run-time argument could be one.
_GIT_RISKY = {"fetch", "pull", "clone", "ls-remote", "push", "archive", "rebase", "bisect",
              "submodule", "difftool", "mergetool", "grep", "send-email", "config", "filter-branch",
              "log", "diff", "show"}
_GIT_RUNS = {
    "filter-branch": "runs its filters as shell code",
    "instaweb": "starts a web server and a browser",
    "mergetool": "runs a merge program",
    "difftool": "runs a diff program",
    "remote-ext": "runs a command as a git transport",
    "remote-fd": "talks to a program over file descriptors",
    "web--browse": "starts a browser",
}
_PYTHON = re.compile(r"^(?:python|pypy)[0-9.]*$")
_SHORT_BUNDLE = re.compile(r"-[A-Za-z0-9]+")
_WITH_VALUE = {
    "python": {"-W", "-X", "-Q"},
    "node": {"-r", "--require", "--import", "--loader", "--experimental-loader", "--conditions",
             "-C", "--title", "--input-type"},
    # perl and ruby take most values attached (`-i.bak`, `-l0`); these also take the next word
    "perl": {"-I"},
    "ruby": {"-I", "-r", "-C", "-E"},
}


def _form(what: str, why: str, names: tuple[str, ...] = (), example: str = "") -> ExecForm:
    return ExecForm(f"`{what}`", why, names, f"run({example})" if example else "")


def exec_forms(name: str, argv: list[str], dynamic: frozenset[int]) -> list[ExecForm]:
    """Every form in this command (its argv after wrappers; `dynamic` are the indices of
    words only known at run time: expansions, globs)."""
    forms: list[ExecForm] = []
    if name in _ALWAYS:
        forms.append(_form(name, _ALWAYS[name], (name,), f"{name} *"))
    detector = _DETECTORS.get("python" if _PYTHON.match(name) else name)
    if detector is not None:
        forms += detector(argv)
    elif name in PACKAGE_TOOLS or re.fullmatch(r"pip[0-9.]*", name):
        forms += package_forms(name, argv)
    i = min(dynamic, default=0)
    matters = i and (git_dynamic_matters(argv, i) if name == "git" else _options_matter(name))
    if matters and "--" not in argv[1:i]:
        forms.append(_form(f"{name} {argv[i]}", "is only known when the line runs, and could "
                           "turn out to be an option that runs a program"))
    return forms


def _options_matter(name: str) -> bool:
    """Whether a run-time word could become an option that runs something, for `name`."""
    return name in _DETECTORS or name in PACKAGE_TOOLS or _PYTHON.match(name) is not None \
        or exec_capable(name) or re.fullmatch(r"pip[0-9.]*", name) is not None


def _git(argv: list[str]) -> list[ExecForm]:
    line = split_git(argv)
    forms: list[ExecForm] = []
    if line.unknown:
        forms.append(_form(f"git {line.unknown}", "is an option this check does not know, so "
                           "what git runs is unclear"))
    for value in line.configs:
        if not _GIT_SAFE_CONFIG.match(value):
            key = value.split("=", 1)[0]
            forms.append(_form(f"git -c {key}", "changes git's configuration for this run",
                               ("-c",), f"git -c {key}=* *"))
    sub = line.sub(argv)
    rest = argv[line.at + 1:] if line.at else []
    if sub in _GIT_RUNS:
        forms.append(_form(f"git {sub}", _GIT_RUNS[sub], (sub,), f"git {sub} *"))
    if sub == "rebase" and any(_short_or_long(a, "x", "--exec") for a in rest):
        forms.append(_form("git rebase -x", "runs a command after each commit",
                           ("-x", "--exec"), "git rebase -x *"))
    if sub == "difftool" and any(_short_or_long(a, "x", "--extcmd") for a in rest):
        forms.append(_form("git difftool -x", "runs the given diff command", ("-x", "--extcmd"),
                           "git difftool -x *"))
    if sub == "bisect" and rest[:1] == ["run"]:
        forms.append(_form("git bisect run", "runs a command at each step", ("run",),
                           "git bisect run *"))
    if sub == "submodule" and "foreach" in rest:
        forms.append(_form("git submodule foreach", "runs a command in every submodule",
                           ("foreach",), "git submodule foreach *"))
    if sub == "config" and any(a in ("-e", "--edit") for a in rest):
        forms.append(_form("git config --edit", "opens an editor", ("-e", "--edit"),
                           "git config --edit"))
    return forms


def git_dynamic_matters(argv: list[str], index: int) -> bool:
    line = split_git(argv)
    return not line.at or index <= line.at or line.sub(argv) in _GIT_RISKY


def _short_or_long(arg: str, letter: str, long: str) -> bool:
    if arg.startswith("--"):
        return option_matches(arg, long)
    return _SHORT_BUNDLE.fullmatch(arg) is not None and letter in arg[1:]


def _find(argv: list[str]) -> list[ExecForm]:
    forms = []
    for a in argv[1:]:
        if a in ("-exec", "-execdir", "-ok", "-okdir"):
            forms.append(_form(f"find {a}", "runs a program for each file", (a,),
                               f"find * {a} *"))
        elif a in ("-fprint", "-fprint0", "-fprintf", "-fls"):
            forms.append(_form(f"find {a}", "writes a file", (a,), f"find * {a} *"))
        elif a == "-delete":
            forms.append(_form("find -delete", "deletes files", (a,), "find * -delete"))
    return forms


def _interpreter(kind: str, inline: dict[str, str], loads: tuple[str, ...],
                 bundle_inline: str = "") -> Callable[[list[str]], list[ExecForm]]:
    """Options before the script: inline code (`-c`, `-e`) and modules loaded first (`-m`,
    `-r`); `bundle_inline` letters also count at the end of a bundle (`perl -pe`)."""

    def detect(argv: list[str]) -> list[ExecForm]:
        name = argv[0].rsplit("/", 1)[-1]
        forms: list[ExecForm] = []
        i = 1
        while i < len(argv):
            a = argv[i]
            if a == "--" or not a.startswith("-") or a == "-":
                break
            key = a.split("=", 1)[0]
            hit = next((o for o in inline if key == o or (len(o) == 2 and a.startswith(o))), None)
            if hit is None and bundle_inline and _SHORT_BUNDLE.fullmatch(a) and \
                    a[-1] in bundle_inline:
                hit = "-" + a[-1]
            if hit is not None:
                forms.append(_form(f"{name} {hit}", inline[hit], (hit, a), f"{name} {a} *"))
                if kind == "python" and a.endswith("m") and argv[i + 1:i + 2] == ["pip"]:
                    forms += package_forms("pip", ["pip", *argv[i + 2:]])
                break  # the code (or module) and its arguments are the rest
            load = next((o for o in loads if key == o or (len(o) == 2 and a.startswith(o))), None)
            if load is not None:
                forms.append(_form(f"{name} {load}", "loads a module before anything else",
                                   (load, a), f"{name} {a} *"))
            i += 2 if a in _WITH_VALUE.get(kind, ()) else 1
        return forms

    return detect


_CODE = "runs inline code"
_DETECTORS: dict[str, Callable[[list[str]], list[ExecForm]]] = {
    "git": _git,
    "find": _find,
    "python": _interpreter("python", {"-c": _CODE, "-m": "runs a module as a program"},
                           ("-W",), "cm"),
    "node": _interpreter("node", {"-e": _CODE, "--eval": _CODE, "-p": _CODE, "--print": _CODE},
                         ("-r", "--require", "--import", "--loader", "--experimental-loader")),
    "perl": _interpreter("perl", {"-e": _CODE, "-E": _CODE}, ("-M", "-m", "-d"), "eE"),
    "ruby": _interpreter("ruby", {"-e": _CODE}, ("-r",), "e"),
    "php": _interpreter("php", {"-r": _CODE, "-B": _CODE, "-R": _CODE, "-E": _CODE,
                                "-F": "runs a file for each input line"}, ("-d",)),
    "lua": _interpreter("lua", {"-e": _CODE}, ("-l",)),
    "Rscript": _interpreter("R", {"-e": _CODE}, ()),
}
_DETECTORS["nodejs"] = _DETECTORS["node"]
