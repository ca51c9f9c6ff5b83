"""Parsing a command line into simple commands: separators, subshells, redirections, heredocs
and `((` commands; each finished command goes to `commands.record_command`."""

from __future__ import annotations

from dataclasses import dataclass

from codeloop.policy.shell.commands import record_command
from codeloop.policy.shell.lexer import MAX_DEPTH, META, Lexer
from codeloop.policy.shell.results import ShellAnalysis
from codeloop.policy.shell.words import Word
from codeloop.policy.state_changes import loop_problem

_RESERVED_SKIP = {"!", "{", "}", "if", "then", "else", "elif", "fi", "do", "done", "while", "until"}
_LOOP_HEADS = {"for", "select"}


@dataclass
class _Heredoc:
    delimiter: str
    strip_tabs: bool
    expands: bool


class Parser(Lexer):
    """One pass over `text`; nested substitutions get their own parser sharing `out`."""

    def __init__(self, text: str, out: ShellAnalysis, depth: int = 0) -> None:
        super().__init__(text, out, depth)
        self.pending: list[_Heredoc] = []

    def parse(self, stop_at_paren: bool = False) -> int:
        """Parse commands until the end (or an unmatched `)`); return the stop position."""
        if self.depth > MAX_DEPTH:
            self.out.problems.append("substitutions nested too deeply")
            return len(self.s)
        words: list[Word] = []
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
                if self._function_definition(words):
                    continue
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

    # -- redirections, heredocs and `((` --------------------------------------------------

    def _skip_comment(self) -> None:
        end = self.s.find("\n", self.i)
        self.i = len(self.s) if end < 0 else end

    def _fd_redirect_ahead(self) -> bool:
        j = self.i
        while j < len(self.s) and self.s[j].isdigit():
            j += 1
        at_word_start = self.i == 0 or self.s[self.i - 1] in META
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
                    inner = self._nested(text)
                    inner._double_quoted_body(Word(), until_quote=False)

    def _arithmetic_command(self, for_loop: bool = False) -> None:
        self.i += 2
        end = self._arithmetic_end(self.i)
        self._arithmetic_body(self.s[self.i:end], for_loop)
        self.i = end + 2

    # -- commands ------------------------------------------------------------------------

    def _function_definition(self, words: list[Word]) -> bool:
        """`NAME ( )`: a function definition; report it and drop the name and parentheses
        (the body that follows is parsed as commands)."""
        if len(words) != 1 or words[0].quoted:
            return False
        j = self.i + 1
        while j < len(self.s) and self.s[j] in " \t":
            j += 1
        if j >= len(self.s) or self.s[j] != ")":
            return False
        self._defines(words[0].value)
        words.clear()
        self.i = j + 1
        return True

    def _defines(self, name: str) -> None:
        # Only bash runs a function for a name: a definition can shadow any program
        # (`ls() { sh; }; ls`), so no allow rule for the name can be trusted afterwards.
        self.out.problems.append(f"defines a shell function `{name}`, which changes what that "
                                 "name runs")

    def _end(self, words: list[Word]) -> None:
        while words and not words[0].quoted:
            head = words[0].value
            if head in _RESERVED_SKIP:
                words = words[1:]
            elif head == "function":  # `function NAME {`: the body follows as commands
                self._defines(words[1].value if len(words) > 1 else "")
                words = words[2:]
            elif head in _LOOP_HEADS:  # `for x in words`: no command here
                problem = loop_problem(words[1].value) if len(words) > 1 else None
                if problem:
                    self.out.problems.append(problem)
                return
            else:
                break
        if words:
            record_command(self.out, words, [], self.depth, parse_script)


def parse_script(script: str, out: ShellAnalysis, depth: int) -> None:
    """Parse a script that a command runs (`bash -c`, `su -c`, `watch`) into `out`."""
    Parser(script, out, depth).parse()
