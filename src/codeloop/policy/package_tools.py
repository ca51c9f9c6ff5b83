"""Package managers and build tools whose subcommands run code: `npm run`, `npm install`
(lifecycle scripts), `pip install` (setup code), `cargo build` (build scripts), `go generate`.
Each tool has a list of subcommands that only read or report; every other subcommand is a
form an allow rule must name (`run(npm test)`, `run(cargo test *)`)."""

from __future__ import annotations

import re

from codeloop.policy.shell.results import ExecForm

_NPM_READS = {"ls", "list", "la", "ll", "view", "v", "info", "show", "outdated", "search", "s",
              "se", "find", "explain", "why", "prefix", "root", "fund", "query", "whoami", "ping",
              "doctor"}
# tool -> subcommands that run no project or package code
_SAFE: dict[str, frozenset[str]] = {
    "npm": frozenset(_NPM_READS),
    "pnpm": frozenset({"list", "ls", "ll", "la", "why", "outdated", "view", "info", "show",
                       "licenses", "root", "bin"}),
    "yarn": frozenset({"info", "list", "why", "versions", "outdated", "licenses", "owner"}),
    "bun": frozenset({"pm", "outdated", "info"}),
    "deno": frozenset({"info", "doc", "fmt", "lint", "check", "types", "completions"}),
    "cargo": frozenset({"version", "metadata", "tree", "search", "fmt", "locate-project", "pkgid",
                        "verify-project", "help", "read-manifest", "clean", "new", "init",
                        "fetch", "generate-lockfile", "vendor", "info", "owner", "login",
                        "logout", "yank", "report"}),
    "go": frozenset({"version", "fmt", "doc", "help", "list", "env", "mod"}),
    "uv": frozenset({"version", "help", "tree", "cache", "self"}),
    "poetry": frozenset({"show", "check", "version", "about", "search", "env", "config", "list"}),
    "pipx": frozenset({"list", "environment"}),
    "pdm": frozenset({"list", "show", "info", "search"}),
    "hatch": frozenset({"status"}),
    "gem": frozenset({"list", "query", "search", "info", "specification", "contents",
                      "environment", "help", "which", "outdated", "dependency"}),
    "bundle": frozenset({"list", "info", "show", "outdated", "check", "version", "platform",
                         "help"}),
    "composer": frozenset({"show", "info", "outdated", "licenses", "depends", "why", "why-not",
                           "prohibits", "validate", "search", "diagnose", "help", "list"}),
}
PACKAGE_TOOLS = frozenset(_SAFE)
# pip's subcommands that build or install (and so run setup code)
_PIP_RUNS = {"install", "download", "wheel"}
# Global options that take the next word as their value, per tool.
_WITH_VALUE: dict[str, frozenset[str]] = {
    "npm": frozenset({"--prefix", "-w", "--workspace", "-C", "--loglevel"}),
    "pnpm": frozenset({"-C", "--dir", "--filter", "-F", "--loglevel"}),
    "yarn": frozenset({"--cwd"}),
    "cargo": frozenset({"--manifest-path", "-Z", "--color"}),
    "go": frozenset({"-C"}),
    "uv": frozenset({"--directory", "--project", "-p", "--python", "--color"}),
    "poetry": frozenset({"-C", "--directory", "-P", "--project"}),
    "composer": frozenset({"-d", "--working-dir"}),
}
_FLAGS = frozenset({"-g", "--global", "--json", "-s", "--silent", "-q", "--quiet", "--verbose",
                    "-d", "--no-color", "--color", "-y", "--yes", "-h", "--help", "-v", "-V",
                    "--version", "--offline", "--frozen", "--locked", "--no-progress", "-n",
                    "--no-interaction", "--ansi", "--no-ansi"})
_CONFIG_READS = {"get", "list", "ls"}


def _subcommand(tool: str, args: list[str]) -> tuple[int, str]:
    """(index of the subcommand in args or -1, an unknown option in front of it)."""
    values = _WITH_VALUE.get(tool, frozenset())
    i = 0
    while i < len(args):
        a = args[i]
        if a in values:
            i += 2
        elif a.startswith("+") or a in _FLAGS or a.split("=", 1)[0] in values or (
                a.startswith("--") and "=" in a):
            i += 1
        elif a.startswith("-"):
            return -1, a
        else:
            return i, ""
    return -1, ""


def package_forms(name: str, argv: list[str]) -> list[ExecForm]:
    """The form of a package-manager line, if its subcommand may run code."""
    tool = "pip" if re.fullmatch(r"pip[0-9.]*", name) else name
    args = list(argv[1:])
    at, unknown = _subcommand(tool, args)
    if unknown:
        return [ExecForm(f"`{name} {unknown}`", "is an option this check does not know, so "
                         "what it runs is unclear")]
    sub = args[at] if at >= 0 else ""
    rest = args[at + 1:] if at >= 0 else []
    if tool == "pip":
        runs = sub in _PIP_RUNS
    elif tool == "uv" and sub == "pip":
        return package_forms("pip", ["pip", *rest])
    elif not sub:
        runs = tool == "yarn" and not args  # a bare `yarn` installs (and runs scripts)
    elif sub in ("config", "c") and tool in ("npm", "pnpm", "yarn"):
        runs = not rest or rest[0] not in _CONFIG_READS  # `config set` is also a problem
    else:
        runs = sub not in _SAFE[tool]
    if not runs:
        return []
    if not sub:  # a bare `yarn` installs: only a rule for exactly `yarn` admits it
        return [ExecForm(f"`{name}`", "installs packages and runs their scripts")]
    what = f"{name} {sub}"
    return [ExecForm(f"`{what}`", "runs package scripts, build steps or other code", (sub,),
                     f"run({what} *)")]
