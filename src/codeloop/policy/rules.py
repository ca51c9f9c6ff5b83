"""Permission rules — `run(pytest *)`, `edit(src/**)`, `read(./.env)`, a bare tool name —
and what a tool call looks like to them (its commands or its paths)."""

from __future__ import annotations

import fnmatch
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pathspec

from codeloop.errors import ConfigError
from codeloop.policy.command_pattern import CommandPattern
from codeloop.policy.shell import ShellAnalysis, SimpleCommand, analyse

EDIT_TOOLS = frozenset({"edit_file", "write_file", "apply_patch"})
READ_TOOLS = frozenset({"read_file", "list_files", "grep"})
RUN_TOOLS = frozenset({"run"})

# Rule family -> the tools it covers. Claude Code's names are accepted so users' settings
# carry over (`Bash(npm test:*)`, `Edit(src/**)`, `Read(./.env)`).
_FAMILIES: dict[str, tuple[str, frozenset[str]]] = {
    "run": ("run", RUN_TOOLS),
    "bash": ("run", RUN_TOOLS),
    "edit": ("edit", EDIT_TOOLS),
    "write": ("edit", EDIT_TOOLS),
    "multiedit": ("edit", EDIT_TOOLS),
    "notebookedit": ("edit", EDIT_TOOLS),
    "read": ("read", READ_TOOLS),
    "glob": ("read", READ_TOOLS),
    "ls": ("read", READ_TOOLS),
    "grep": ("grep", frozenset({"grep"})),
}
_PATH_KEYS = ("path", "file_path", "file", "filename", "paths", "files", "directory", "dir")
_PATCH_KEYS = ("patch", "diff", "input", "content", "text")
_RULE = re.compile(r"^\s*([A-Za-z_*?][A-Za-z0-9_.:*?-]*)\s*(?:\((.*)\))?\s*$", re.S)
_ENVELOPE_HEADERS = ("*** Add File:", "*** Delete File:", "*** Update File:", "*** Move to:")
_SEARCH_HEAD = re.compile(r"^<{5,9} ?SEARCH\s*$")
_REPLACE_TAIL = re.compile(r"^>{5,9} ?REPLACE\s*$")


class PolicyConfigError(ConfigError):
    """A permission rule, hook or approval mode in the configuration is malformed."""


@dataclass(frozen=True)
class PathRef:
    """One path a call touches, as absolute normalised spellings (lexical, then resolved)."""

    spellings: tuple[str, ...]
    is_dir: bool = False


@dataclass
class CallTarget:
    """What rules see of a tool call: its commands (run) or its paths (file tools)."""

    name: str
    shell: ShellAnalysis | None = None
    paths: list[PathRef] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    roots: tuple[str, ...] = ()  # the repository root, lexically and with symlinks resolved
    arg_paths: list[PathRef] | None = None  # filled on first use by path rules on commands

    @property
    def command_text(self) -> str:
        return self.shell.source.strip() if self.shell else ""


def _expand_braces(pattern: str) -> list[str]:
    """`src/**/*.{py,pyi}` -> two patterns (pathspec has no brace alternation)."""
    m = re.search(r"\{([^{}]*,[^{}]*)\}", pattern)
    if not m:
        return [pattern]
    out: list[str] = []
    for choice in m.group(1).split(","):
        out.extend(_expand_braces(pattern[: m.start()] + choice + pattern[m.end():]))
    return out


@dataclass(frozen=True)
class _PathPattern:
    anchor: str  # "" = the repository root; otherwise an absolute directory
    spec: pathspec.GitIgnoreSpec

    @classmethod
    def parse(cls, text: str) -> _PathPattern:
        anchor = ""
        lines = []
        for pat in _expand_braces(text.strip()):
            if pat.startswith("//"):
                anchor, pat = "/", "/" + pat[2:].lstrip("/")
            elif pat.startswith("~/"):
                anchor, pat = os.path.expanduser("~"), "/" + pat[2:]
            elif pat.startswith("./"):
                pat = "/" + pat[2:]
            lines.append(pat)
        return cls(anchor, pathspec.GitIgnoreSpec.from_lines(lines))

    def matches(self, ref: PathRef, roots: tuple[str, ...], every: bool) -> bool:
        hits = [any(self._one(s, ref.is_dir, r) for r in roots) for s in ref.spellings]
        return all(hits) if every else any(hits)

    def _one(self, spelling: str, is_dir: bool, root: str) -> bool:
        base = (self.anchor or root).rstrip("/")
        if not spelling.startswith(base + "/"):
            return False
        rel = spelling[len(base) + 1:]
        return bool(rel) and bool(self.spec.match_file(rel + "/" if is_dir else rel))


@dataclass(frozen=True)
class Rule:
    """One parsed rule. `family` is run/edit/read/grep, or None for an exact tool name."""

    text: str
    tool: str
    family: str | None
    tools: frozenset[str]
    command: CommandPattern | None = None
    path: _PathPattern | None = None
    # A pattern over tool names (`mcp__git__*`), for tools that exist only at run time.
    names: str | None = None

    @classmethod
    def parse(cls, text: str) -> Rule:
        if not isinstance(text, str):
            raise PolicyConfigError(f"permission rule {text!r} is not a string",
                                    "write rules like 'run(pytest *)' or 'edit(src/**)'")
        m = _RULE.match(text)
        if not m:
            raise PolicyConfigError(
                f"cannot parse permission rule {text!r}",
                "write TOOL or TOOL(pattern), e.g. 'run(npm test)', 'edit(src/**)', 'read(./.env)'",
            )
        tool, spec = m.group(1), m.group(2)
        fam = _FAMILIES.get(tool.lower())
        family, tools = (fam[0], fam[1]) if fam else (None, frozenset({tool}))
        names = _name_pattern(tool) if fam is None else None
        if spec is None:
            return cls(text.strip(), tool, family, tools, names=names)
        if names is not None:
            raise PolicyConfigError(f"permission rule {text!r}: a tool-name pattern takes no "
                                    "argument pattern", f"write '{tool}' alone")
        if not spec.strip():
            raise PolicyConfigError(f"permission rule {text!r} has an empty pattern",
                                    f"write '{tool}' alone to match every call")
        if family is None:
            raise PolicyConfigError(
                f"permission rule {text!r}: tool {tool!r} takes no pattern",
                "patterns work with run(...), edit(...)/write(...), read(...) and grep(...); "
                f"write '{tool}' alone to match every call of that tool",
            )
        if family == "run":
            return cls(text.strip(), tool, family, tools, command=CommandPattern.parse(spec))
        return cls(text.strip(), tool, family, tools, path=_PathPattern.parse(spec))

    def covers(self, name: str) -> bool:
        if self.names is not None:
            return fnmatch.fnmatchcase(name, self.names)
        return name in self.tools

    def match_command(self, cmd: SimpleCommand) -> bool:
        """For deny and ask rules: whether the rule matches `cmd` (see `admits` for allow)."""
        return self.command is None or self.command.matches(cmd)

    def admits(self, cmd: SimpleCommand) -> tuple[bool, str]:
        """Whether this allow rule admits `cmd`; if its pattern matched but it does not,
        the reason (shown to the person asked)."""
        if self.command is None:
            return True, ""
        ok, stop = self.command.admits(cmd)
        if ok or stop is None:
            return ok, ""
        if isinstance(stop, str):
            return False, (f"{stop}; the rule {self.text} covers the wrapper, not the command "
                           "it runs")
        named = (f"a rule that names it does, e.g. {stop.example}" if stop.names and stop.example
                 else "only a rule for this exact command does")
        return False, f"{stop.what} {stop.why}; the rule {self.text} does not admit that ({named})"

    def match_path(self, ref: PathRef, roots: tuple[str, ...], for_allow: bool) -> bool:
        return self.path is None or self.path.matches(ref, roots, every=for_allow)

    @property
    def bare(self) -> bool:
        return self.command is None and self.path is None


@dataclass(frozen=True)
class RuleSet:
    """The three rule lists. Deny and ask match when any part of a call matches; allow
    needs every part (each command of a compound line, each path of a patch) matched."""

    allow: tuple[Rule, ...] = ()
    ask: tuple[Rule, ...] = ()
    deny: tuple[Rule, ...] = ()

    @classmethod
    def parse(cls, allow: list[str], ask: list[str], deny: list[str]) -> RuleSet:
        return cls(tuple(map(Rule.parse, allow)), tuple(map(Rule.parse, ask)),
                   tuple(map(Rule.parse, deny)))

    def first_deny(self, target: CallTarget) -> Rule | None:
        return _first_any(self.deny, target)

    def first_ask(self, target: CallTarget) -> Rule | None:
        return _first_any(self.ask, target)

    def allowed_by(self, target: CallTarget) -> list[Rule] | None:
        """The allow rules that together cover every part of the call, or None."""
        return self.allow_match(target)[0]

    def allow_match(self, target: CallTarget) -> tuple[list[Rule] | None, str]:
        """(the allow rules covering every part of the call, or None; why a rule whose
        pattern matched a command did not admit it, if one did)."""
        rules = [r for r in self.allow if r.covers(target.name)]
        for rule in rules:
            if rule.bare:
                return [rule], ""
        if target.shell is not None:
            whole = [r for r in rules if r.command and r.command.exact is not None
                     and target.command_text == r.command.exact]
            if whole:  # an exact, remembered compound command line
                return whole[:1], ""
            parts: list[Rule] = []
            refusal, missing = "", False
            for cmd in target.shell.commands:  # all of them: the reason may be in any
                hit = None
                for rule in (r for r in rules if r.command):
                    ok, why = rule.admits(cmd)
                    if ok:
                        hit = rule
                        break
                    refusal = refusal or why
                missing = missing or hit is None
                if hit is not None:
                    parts.append(hit)
            return (None if missing else parts or None), refusal
        used: list[Rule] = []
        for ref in target.paths:
            hit = next((r for r in rules if r.path and r.match_path(ref, target.roots, True)), None)
            if hit is None:
                return None, ""
            used.append(hit)
        return used or None, ""


def _name_pattern(tool: str) -> str | None:
    """The tool-name glob a bare rule stands for: `mcp__git__*` as written, and a server's
    name alone (`mcp__git`) for all of its tools; None for one exact tool."""
    if "*" in tool or "?" in tool:
        return tool
    if tool.startswith("mcp__") and "__" not in tool[len("mcp__"):]:
        return tool + "__*"
    return None


def _first_any(rules: tuple[Rule, ...], target: CallTarget) -> Rule | None:
    for rule in rules:
        if rule.path and target.shell and rule.family in ("read", "edit"):
            # a file denied to the file tools is denied to commands that name it too
            if any(rule.match_path(ref, target.roots, False) for ref in _argument_paths(target)):
                return rule
            continue
        if not rule.covers(target.name):
            continue
        if rule.bare:
            return rule
        if rule.command and target.shell:
            if target.command_text == rule.command.exact or any(
                    rule.match_command(c) for c in target.shell.commands):
                return rule
        elif rule.path and any(rule.match_path(ref, target.roots, False) for ref in target.paths):
            return rule
    return None


def _argument_paths(target: CallTarget) -> list[PathRef]:
    """Command arguments and redirect targets read as paths (`--file=x` as `x`), once per call."""
    if target.arg_paths is None:
        target.arg_paths = []
        if target.shell is not None and target.roots:
            shell = target.shell
            words = [a for c in shell.commands for a in c.argv[1:]] + shell.redirect_targets
            raw = {w.split("=", 1)[1] if w.startswith("-") and "=" in w else w for w in words}
            root = Path(target.roots[0])
            target.arg_paths = [path_ref(w, root) for w in sorted(raw)
                                if w and not w.startswith("-") and "\x00" not in w]
    return target.arg_paths


def patch_paths(patch: str) -> list[str]:
    """Every file path a patch names, read at least as leniently as `edit/` reads it (unified
    diff headers, `*** Update File:` envelopes, the path line before a SEARCH block), so a
    rule can never see fewer files than the edit will touch."""
    out: list[str] = []

    def add(raw: str) -> None:
        name = raw.split("\t")[0].strip().strip('"')
        if name[:2] in ("a/", "b/"):
            name = name[2:]
        if name and name != "/dev/null" and name not in out:
            out.append(name)

    lines = patch.split("\n")
    for n, line in enumerate(lines):
        if line.startswith(_ENVELOPE_HEADERS):
            add(line.split(":", 1)[1])
        elif line.startswith(("--- ", "+++ ")):
            add(line[4:])
        elif line.startswith("diff --git "):
            for part in line[len("diff --git "):].split()[:2]:
                add(part)
        elif line.startswith(("rename from ", "rename to ", "copy from ", "copy to ")):
            add(line.split(" ", 2)[2])
        elif _SEARCH_HEAD.match(line):
            j = n - 1
            while j >= 0 and (not lines[j].strip() or lines[j].strip().startswith("```")):
                j -= 1
            if j >= 0 and not _REPLACE_TAIL.match(lines[j]):
                text = lines[j].strip().strip("*`#:").strip()
                text = re.sub(r"^(file|path)\s*:\s*", "", text, flags=re.I).strip("`'\" ")
                if text and " " not in text:
                    add(text)
    return out


def path_ref(raw: str, cwd: Path) -> PathRef:
    """Both spellings of `raw` under `cwd`: lexically normalised, and with symlinks resolved."""
    lexical = os.path.normpath(os.path.join(str(cwd), raw))
    spellings = [lexical]
    real = os.path.realpath(lexical)
    if real != lexical:
        spellings.append(real)
    return PathRef(tuple(spellings), os.path.isdir(lexical))


def describe_call(name: str, args: dict[str, Any], cwd: Path) -> CallTarget:
    """Turn a call into what rules match on; problems are reasons to ask."""
    lexical = os.path.normpath(os.path.abspath(cwd))
    roots = tuple(dict.fromkeys((lexical, os.path.realpath(lexical))))
    target = CallTarget(name=name, roots=roots)
    if name in RUN_TOOLS:
        command = args.get("command")
        if isinstance(command, list) and all(isinstance(a, str) for a in command):
            command = " ".join(_quote(a) for a in command)
        if not isinstance(command, str):
            target.problems.append("the run call has no command string")
            return target
        target.shell = analyse(command)
        target.problems.extend(target.shell.problems)
        return target
    if name not in EDIT_TOOLS | READ_TOOLS:
        return target
    raw_paths: list[str] = []
    for key in _PATH_KEYS:
        value = args.get(key)
        if isinstance(value, str):
            raw_paths.append(value)
        elif isinstance(value, list):
            raw_paths.extend(v for v in value if isinstance(v, str))
    if name == "apply_patch":
        for key in _PATCH_KEYS:
            value = args.get(key)
            if isinstance(value, str):
                raw_paths.extend(patch_paths(value))
    if not raw_paths:
        if name in READ_TOOLS:
            raw_paths = ["."]
        else:
            target.problems.append(f"cannot tell which files {name} changes")
    target.paths = [path_ref(p, Path(lexical)) for p in raw_paths]
    return target


def _quote(arg: str) -> str:
    return arg if re.fullmatch(r"[A-Za-z0-9_./:=@%+,-]+", arg) else "'" + arg.replace("'", "'\\''") + "'"
