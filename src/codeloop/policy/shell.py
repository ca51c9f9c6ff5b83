"""Split a shell command line into the simple commands it would run, or say why it cannot.

Hand-written rather than `bashlex`: bashlex is GPLv3+ (we ship Apache-2.0), fails on common
syntax (`[[ … ]]`, array assignments) and throws away the distinction we need between
"parsed, and these are all the commands" and "could not follow this". `shlex` alone does not
see operators, substitutions or heredocs. This tokenizer follows the bash grammar only as
far as policy needs: every place where code can run is found, and anything it cannot follow
is reported as a problem (which the engine turns into "ask"), never silently dropped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from codeloop.policy.exec_vectors import exec_env_problem, hidden_exec_problem

_META = " \t\n;&|()<>"
_MAX_DEPTH = 20
_MAX_LENGTH = 200_000
_INNER_SUBST = re.compile(r"\$\([^()]*\)|`[^`]*`")
_ADJACENT_OPERANDS = re.compile(r"[\w\])}'\"]\s+[\w$'\"]")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\[[^\]]*\])?\+?=")
_RESERVED_SKIP = {"!", "{", "}", "if", "then", "else", "elif", "fi", "do", "done", "while", "until"}
_LOOP_HEADS = {"for", "select"}
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
_ANSI_C = {"a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n", "r": "\r",
           "t": "\t", "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"}


@dataclass(frozen=True)
class SimpleCommand:
    """One command that would run: `argv` is the real program and its arguments after
    wrappers (`env`, `timeout`, `xargs`, …) are peeled off; `full` keeps the wrappers."""

    argv: tuple[str, ...]
    full: tuple[str, ...]
    inline_code: str = ""

    @property
    def name(self) -> str:
        """The program's base name: `/usr/bin/curl` is `curl`."""
        return self.argv[0].rsplit("/", 1)[-1]

    @property
    def text(self) -> str:
        return " ".join(self.argv)


@dataclass
class ShellAnalysis:
    """All the simple commands found, plus every reason the line could not be followed."""

    source: str
    commands: list[SimpleCommand] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    redirect_targets: list[str] = field(default_factory=list)

    @property
    def analysable(self) -> bool:
        return not self.problems


@dataclass
class _Word:
    value: str = ""
    expanded: bool = False  # contains an unquoted-or-double-quoted $ expansion or substitution
    globbed: bool = False  # contains an unquoted * ? [
    quoted: bool = False
    quote_at: int = -1  # length of the value when the first quote or escape appeared

    def mark_quoted(self) -> None:
        if not self.quoted:
            self.quoted = True
            self.quote_at = len(self.value)

    @property
    def assignment(self) -> bool:
        """`NAME=value` with the name unquoted (the value may be quoted)."""
        m = _ASSIGNMENT.match(self.value)
        return m is not None and (self.quote_at < 0 or m.end() <= self.quote_at)


@dataclass
class _Heredoc:
    delimiter: str
    strip_tabs: bool
    expands: bool


class _Parser:
    """One pass over `text`; nested substitutions get their own parser sharing `out`."""

    def __init__(self, text: str, out: ShellAnalysis, depth: int = 0) -> None:
        self.s = text
        self.i = 0
        self.out = out
        self.depth = depth
        self.pending: list[_Heredoc] = []

    # -- entry points --------------------------------------------------------------------

    def parse(self, stop_at_paren: bool = False) -> int:
        """Parse commands until the end (or an unmatched `)`); return the stop position."""
        if self.depth > _MAX_DEPTH:
            self.out.problems.append("substitutions nested too deeply")
            return len(self.s)
        words: list[_Word] = []
        parens = 0
        s = self.s
        while self.i < len(s):
            c = s[self.i]
            if c in " \t":
                self.i += 1
            elif c == "\\" and s.startswith("\\\n", self.i):
                self.i += 2
            elif c == "#":  # the main loop only stops at word starts, where `#` opens a comment
                self._skip_comment()
            elif c == "\n":
                self.i += 1
                self._end(words)
                words = []
                self._read_heredocs()
            elif c == ")":
                self._end(words)
                words = []
                self.i += 1
                if parens == 0:
                    if stop_at_paren:
                        return self.i
                    self.out.problems.append("unbalanced `)`")
                else:
                    parens -= 1
            elif c == "(":
                for_loop = len(words) == 1 and not words[0].quoted and words[0].value == "for"
                at_start = all(not w.quoted and w.value in _RESERVED_SKIP for w in words)
                if (at_start or for_loop) and s.startswith("((", self.i):
                    self._arithmetic_command(for_loop)
                    if for_loop:
                        words = []
                    continue
                self._end(words)
                words = []
                parens += 1
                self.i += 1
            elif c in ";&|":
                if c == "&" and s.startswith("&>", self.i):
                    self._redirect()
                    continue
                if s.startswith(";;", self.i) or s.startswith(";&", self.i):
                    self.out.problems.append("`case` statements are not analysed")
                self._end(words)
                words = []
                self.i += 1
            elif c in "<>":
                if s.startswith(("<(", ">("), self.i):
                    words.append(self._process_substitution())
                else:
                    self._redirect()
            elif c.isdigit() and self._fd_redirect_ahead():
                while s[self.i].isdigit():
                    self.i += 1
                self._redirect()
            else:
                words.append(self._word())
        self._end(words)
        if self.pending:
            self.out.problems.append("heredoc without a body")
        if parens:
            self.out.problems.append("unbalanced `(`")
        if stop_at_paren:
            self.out.problems.append("unterminated `$(`")
        return self.i

    # -- lexical pieces ------------------------------------------------------------------

    def _skip_comment(self) -> None:
        end = self.s.find("\n", self.i)
        self.i = len(self.s) if end < 0 else end

    def _fd_redirect_ahead(self) -> bool:
        j = self.i
        while j < len(self.s) and self.s[j].isdigit():
            j += 1
        at_word_start = self.i == 0 or self.s[self.i - 1] in _META
        return at_word_start and j < len(self.s) and self.s[j] in "<>"

    def _redirect(self) -> None:
        s = self.s
        for op in ("<<<", "<<-", "&>>", "<<", ">>", ">&", "<&", ">|", "<>", "&>", "<", ">"):
            if s.startswith(op, self.i):
                self.i += len(op)
                break
        while self.i < len(s) and s[self.i] in " \t":
            self.i += 1
        if self.i >= len(s) or s[self.i] in "\n;&|()<>":
            self.out.problems.append("redirection without a target")
            return
        if op in ("<<", "<<-"):
            self._heredoc_start(op == "<<-")
            return
        self.out.redirect_targets.append(self._word().value)

    def _heredoc_start(self, strip_tabs: bool) -> None:
        word = self._word()
        if not word.value:
            self.out.problems.append("heredoc without a delimiter")
            return
        self.pending.append(_Heredoc(word.value, strip_tabs, expands=not word.quoted))

    def _read_heredocs(self) -> None:
        while self.pending:
            doc = self.pending.pop(0)
            body: list[str] = []
            while True:
                if self.i >= len(self.s):
                    self.out.problems.append(f"heredoc `{doc.delimiter}` is never closed")
                    self.pending.clear()
                    return
                end = self.s.find("\n", self.i)
                line = self.s[self.i:] if end < 0 else self.s[self.i:end]
                self.i = len(self.s) if end < 0 else end + 1
                if (line.lstrip("\t") if doc.strip_tabs else line) == doc.delimiter:
                    break
                body.append(line)
            if doc.expands:
                text = "\n".join(body)
                if "$" in text or "`" in text:
                    inner = _Parser(text, self.out, self.depth + 1)
                    inner._double_quoted_body(_Word(), until_quote=False)

    def _arithmetic_command(self, for_loop: bool = False) -> None:
        self.i += 2
        end = self._arithmetic_end(self.i)
        self._arithmetic_body(self.s[self.i:end], for_loop)
        self.i = end + 2

    def _arithmetic_body(self, body: str, for_loop: bool = False) -> None:
        """Bash reads `((a) ; (b))` as two subshells when it is not valid arithmetic, so a
        body that does not look like arithmetic is parsed as commands, and asked."""
        if _looks_arithmetic(body, for_loop):
            self._scan_expansions_in(body)
        elif not self._too_deep():
            self.out.problems.append("`((` … `))` that is not arithmetic runs as subshells")
            _Parser(f"({body})", self.out, self.depth + 1).parse()

    def _arithmetic_end(self, start: int) -> int:
        """Index of the `))` closing an arithmetic body that starts at `start`."""
        depth = 0
        for j in range(start, len(self.s)):
            c = self.s[j]
            if c == "(":
                depth += 1
            elif c == ")":
                if depth == 0 and self.s.startswith("))", j):
                    return j
                depth -= 1
        self.out.problems.append("unterminated `((`")
        return len(self.s)

    def _matching_close(self, start: int, opener: str, closer: str) -> int:
        depth = 1
        j = start
        while j < len(self.s):
            if self.s.startswith(closer, j):
                depth -= 1
                if depth == 0:
                    return j
                j += len(closer)
            elif self.s.startswith(opener, j):
                depth += 1
                j += len(opener)
            else:
                j += 1
        self.out.problems.append(f"unterminated `{opener}`")
        return len(self.s)

    def _too_deep(self) -> bool:
        if self.depth < _MAX_DEPTH:
            return False
        self.out.problems.append("substitutions nested too deeply")
        self.i = len(self.s)
        return True

    def _scan_expansions_in(self, text: str) -> None:
        """Find command substitutions inside text that bash expands (arithmetic, `${…}`)."""
        if ("$(" in text or "`" in text) and not self._too_deep():
            inner = _Parser(text, self.out, self.depth + 1)
            inner._double_quoted_body(_Word(), until_quote=False)

    def _process_substitution(self) -> _Word:
        self.i += 2
        self.i = _Parser(self.s, self.out, self.depth + 1).parse_from(self.i)
        return _Word(value="/dev/fd/63", expanded=True)

    def parse_from(self, start: int) -> int:
        self.i = start
        return self.parse(stop_at_paren=True)

    def _word(self) -> _Word:
        w = _Word()
        s = self.s
        while self.i < len(s):
            c = s[self.i]
            if c in _META:
                if c == "(" and _ASSIGNMENT.match(w.value) and w.value.endswith("="):
                    self._array_literal(w)
                    continue
                break
            if c == "\\":
                if self.i + 1 >= len(s):
                    self.i += 1
                elif s[self.i + 1] == "\n":
                    self.i += 2
                else:
                    w.mark_quoted()
                    w.value += s[self.i + 1]
                    self.i += 2
            elif c == "'":
                end = s.find("'", self.i + 1)
                if end < 0:
                    self.out.problems.append("unbalanced single quote")
                    end = len(s)
                w.mark_quoted()
                w.value += s[self.i + 1:end]
                self.i = end + 1
            elif c == '"':
                self.i += 1
                w.mark_quoted()
                self._double_quoted_body(w, until_quote=True)
            elif c == "$" and s.startswith("$'", self.i):
                self._ansi_c(w)
            elif c == "$" and s.startswith('$"', self.i):
                self.i += 2
                w.mark_quoted()
                self._double_quoted_body(w, until_quote=True)
            elif c in "$`":
                self._expansion(w)
            else:
                if c in "*?[{":  # globs and brace expansion: `{curl,x}` runs curl
                    w.globbed = True
                w.value += c
                self.i += 1
        return w

    def _array_literal(self, w: _Word) -> None:
        self.i += 1
        while self.i < len(self.s) and self.s[self.i] != ")":
            if self.s[self.i] in " \t\n":
                self.i += 1
            else:
                self._word()
                if self.i < len(self.s) and self.s[self.i] in ";&|(<>":
                    self.out.problems.append("unexpected operator in an array literal")
                    self.i += 1
        if self.i >= len(self.s):
            self.out.problems.append("unbalanced `(` in an array literal")
        self.i += 1
        w.value += "(...)"

    def _ansi_c(self, w: _Word) -> None:
        j = self.i + 2
        s = self.s
        while j < len(s) and s[j] != "'":
            j += 2 if s[j] == "\\" else 1
        if j >= len(s):
            self.out.problems.append("unbalanced `$'` quote")
        w.mark_quoted()
        w.value += _decode_ansi_c(s[self.i + 2:j])
        self.i = j + 1

    def _double_quoted_body(self, w: _Word, until_quote: bool) -> None:
        s = self.s
        while self.i < len(s):
            c = s[self.i]
            if until_quote and c == '"':
                self.i += 1
                return
            if c == "\\" and self.i + 1 < len(s):
                nxt = s[self.i + 1]
                if nxt in '$`"\\':
                    w.value += nxt
                elif nxt != "\n":
                    w.value += c + nxt
                self.i += 2
            elif c in "$`":
                self._expansion(w)
            else:
                w.value += c
                self.i += 1
        if until_quote:
            self.out.problems.append("unbalanced double quote")

    def _expansion(self, w: _Word) -> None:
        s = self.s
        w.expanded = True
        if self._too_deep():
            return
        if s[self.i] == "`":
            self._backticks()
            w.value += "$(...)"
        elif s.startswith("$((", self.i):
            end = self._arithmetic_end(self.i + 3)
            self._arithmetic_body(s[self.i + 3:end])
            self.i = end + 2
            w.value += "$((...))"
        elif s.startswith("$(", self.i):
            self.i = _Parser(s, self.out, self.depth + 1).parse_from(self.i + 2)
            w.value += "$(...)"
        elif s.startswith("${", self.i):
            end = self._matching_close(self.i + 2, "{", "}")
            self._scan_expansions_in(s[self.i + 2:end])
            w.value += s[self.i:end + 1]
            self.i = end + 1
        else:
            m = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*|[0-9@*#?$!-])").match(s, self.i)
            if m:
                w.value += m.group(0)
                self.i = m.end()
            else:
                w.value += "$"
                w.expanded = False
                self.i += 1

    def _backticks(self) -> None:
        s = self.s
        j = self.i + 1
        inner: list[str] = []
        while j < len(s) and s[j] != "`":
            if s[j] == "\\" and j + 1 < len(s) and s[j + 1] in "`\\$":
                inner.append(s[j + 1])
                j += 2
            else:
                inner.append(s[j])
                j += 1
        if j >= len(s):
            self.out.problems.append("unbalanced backtick")
        _Parser("".join(inner), self.out, self.depth + 1).parse()
        self.i = j + 1

    # -- commands ------------------------------------------------------------------------

    def _end(self, words: list[_Word]) -> None:
        while words and not words[0].quoted:
            head = words[0].value
            if head in _RESERVED_SKIP:
                words = words[1:]
            elif head == "function":  # `function NAME {`: the body follows as commands
                words = words[2:]
            elif head in _LOOP_HEADS:  # `for x in words`: no command here
                return
            else:
                break
        if words:
            _finish(self.out, words, [], self.depth)


def _looks_arithmetic(body: str, for_loop: bool) -> bool:
    """No `;` (except in `for ((…;…;…))`), balanced parentheses, and no two operands side by
    side (`echo hi`)."""
    while True:  # substitutions inside are followed separately; drop them for this test
        reduced = _INNER_SUBST.sub("0", body)
        if reduced == body:
            break
        body = reduced
    if ";" in body and not for_loop:
        return False
    depth = 0
    for c in body:  # `((a) | (b))`: the first `)` closes a subshell, not a parenthesis
        depth += (c == "(") - (c == ")")
        if depth < 0:
            return False
    return not _ADJACENT_OPERANDS.search(body)


def _decode_ansi_c(body: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(body):
        c = body[i]
        if c != "\\" or i + 1 >= len(body):
            out.append(c)
            i += 1
            continue
        nxt = body[i + 1]
        if nxt in _ANSI_C:
            out.append(_ANSI_C[nxt])
            i += 2
        elif nxt == "x":
            m = re.match(r"[0-9A-Fa-f]{1,2}", body[i + 2:])
            out.append(chr(int(m.group(0), 16)) if m else "\\x")
            i += 2 + (len(m.group(0)) if m else 0)
        elif nxt in "uU":
            m = re.match(r"[0-9A-Fa-f]{1,8}" if nxt == "U" else r"[0-9A-Fa-f]{1,4}", body[i + 2:])
            out.append(chr(int(m.group(0), 16)) if m and int(m.group(0), 16) < 0x110000 else "?")
            i += 2 + (len(m.group(0)) if m else 0)
        elif nxt in "01234567":
            m = re.match(r"[0-7]{1,3}", body[i + 1:])
            assert m is not None
            out.append(chr(int(m.group(0), 8) & 0xFF))
            i += 1 + len(m.group(0))
        elif nxt == "c" and i + 2 < len(body):
            out.append(chr(ord(body[i + 2]) & 0x1F))
            i += 3
        else:
            out.append(c + nxt)
            i += 2
    return "".join(out)


# -- wrappers: programs whose arguments are another command ---------------------------------


@dataclass(frozen=True)
class _Wrapper:
    with_arg: frozenset[str] = frozenset()
    flags: frozenset[str] = frozenset()
    positionals: int = 0  # operands before the command (timeout's duration)


def _w(with_arg: str = "", flags: str = "", positionals: int = 0) -> _Wrapper:
    return _Wrapper(frozenset(with_arg.split()), frozenset(flags.split()), positionals)


_WRAPPERS: dict[str, _Wrapper] = {
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
    while i < len(args) and _ASSIGNMENT.match(args[i]):
        i += 1
    return args[i:], ""


def _unwrap(argv: list[str]) -> tuple[list[str] | None, str]:
    """The command a wrapper runs: [] when it runs none, None when we cannot tell."""
    name = argv[0].rsplit("/", 1)[-1]
    if name == "env":
        return _strip_env(argv[1:])
    if name == "command" and any(a in ("-v", "-V") for a in argv[1:2]):
        return [], ""
    spec = _WRAPPERS.get(name)
    assert spec is not None
    return _strip_options(name, spec, argv[1:])


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


def _finish(out: ShellAnalysis, words: list[_Word], outer: list[str], depth: int) -> None:
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
    if name in _WRAPPERS or name == "env":
        inner, problem = _unwrap(argv)
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
            _follow_string(out, " ".join(w.value for w in rest), rest, depth, f"`{name}`")
            return
        _finish(out, rest, [*outer, *argv[: len(argv) - len(inner)]], depth)
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
            _follow_string(out, argv[script_at], [words[script_at]], depth, f"`{name} -c`")
    elif name.rstrip("0123456789.") in _INTERPRETERS:
        inline, stdin = _interpreter_code(argv)
        if stdin:
            out.problems.append(f"`{name}` reads its program from standard input")
    elif name == "find":
        _find_exec(out, words, depth)
    elif name in ("source", ".") and (
            len(argv) < 2 or argv[1] in ("/dev/stdin", "-", "/proc/self/fd/0") or words[1].expanded):
        out.problems.append("`source` of standard input or of an expansion")
    elif name in ("su", "runuser") and "-c" in argv:
        at = argv.index("-c") + 1
        if at < len(argv):
            _follow_string(out, argv[at], [words[at]], depth, f"`{name} -c`")
    hidden = hidden_exec_problem(name, argv, inline)
    if hidden:
        out.problems.append(hidden)
    out.commands.append(SimpleCommand(tuple(argv), full, inline))


def _follow_string(out: ShellAnalysis, script: str, words: list[_Word], depth: int, what: str) -> None:
    if any(w.expanded for w in words):
        out.problems.append(f"{what} runs a string built from an expansion")
        return
    _Parser(script, out, depth + 1).parse()


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


def _find_exec(out: ShellAnalysis, words: list[_Word], depth: int) -> None:
    i = 1
    while i < len(words):
        if words[i].value in ("-exec", "-execdir", "-ok", "-okdir"):
            j = i + 1
            while j < len(words) and words[j].value not in (";", "+"):
                j += 1
            if j >= len(words):
                out.problems.append("`find -exec` without a terminating `;` or `+`")
            if j > i + 1:
                _finish(out, words[i + 1:j], [], depth)
            i = j
        i += 1


def analyse(command: str) -> ShellAnalysis:
    """Every simple command `command` would run, or the problems that stopped us."""
    out = ShellAnalysis(source=command)
    if "\x00" in command:
        out.problems.append("NUL byte in the command")
    if len(command) > _MAX_LENGTH:
        out.problems.append(f"command longer than {_MAX_LENGTH} characters; not analysed")
        return out
    _Parser(command, out).parse()
    out.problems = list(dict.fromkeys(out.problems))
    return out
