"""Reading shell words: quotes, escapes, `$'…'`, expansions and the substitutions inside them.

Every substitution (`$(…)`, backticks, `<(…)`, `$((…))` that is not arithmetic) is parsed as
commands by a nested parser, so code that runs inside a word is never missed.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod

from codeloop.policy.shell.ansi_c import decode_ansi_c
from codeloop.policy.shell.arithmetic import looks_arithmetic
from codeloop.policy.shell.results import ShellAnalysis
from codeloop.policy.shell.words import ASSIGNMENT, Word
from codeloop.policy.state_changes import arithmetic_problem, parameter_problem

META = " \t\n;&|()<>"
MAX_DEPTH = 20


class Lexer(ABC):
    """The word-level half of the parser; `parse` (the command level) is the subclass's."""

    def __init__(self, text: str, out: ShellAnalysis, depth: int = 0) -> None:
        self.s = text
        self.i = 0
        self.out = out
        self.depth = depth

    @abstractmethod
    def parse(self, stop_at_paren: bool = False) -> int:
        """Parse commands until the end (or an unmatched `)`); return the stop position."""

    def parse_from(self, start: int) -> int:
        self.i = start
        return self.parse(stop_at_paren=True)

    def _nested(self, text: str) -> Lexer:
        """A parser one level deeper, recording into the same analysis."""
        return type(self)(text, self.out, self.depth + 1)

    def _arithmetic_body(self, body: str, for_loop: bool = False) -> None:
        """Bash reads `((a) ; (b))` as two subshells when it is not valid arithmetic, so a
        body that does not look like arithmetic is parsed as commands, and asked."""
        if looks_arithmetic(body, for_loop):
            problem = arithmetic_problem(body)
            if problem:
                self.out.problems.append(problem)
            self._scan_expansions_in(body)
        elif not self._too_deep():
            self.out.problems.append("`((` … `))` that is not arithmetic runs as subshells")
            self._nested(f"({body})").parse()

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
        if self.depth < MAX_DEPTH:
            return False
        self.out.problems.append("substitutions nested too deeply")
        self.i = len(self.s)
        return True

    def _scan_expansions_in(self, text: str) -> None:
        """Find command substitutions inside text that bash expands (arithmetic, `${…}`)."""
        if ("$(" in text or "`" in text) and not self._too_deep():
            inner = self._nested(text)
            inner._double_quoted_body(Word(), until_quote=False)

    def _process_substitution(self) -> Word:
        self.i += 2
        self.i = self._nested(self.s).parse_from(self.i)
        return Word(value="/dev/fd/63", expanded=True)

    def _word(self) -> Word:
        w = Word()
        s = self.s
        while self.i < len(s):
            c = s[self.i]
            if c in META:
                if c == "(" and ASSIGNMENT.match(w.value) and w.value.endswith("="):
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

    def _array_literal(self, w: Word) -> None:
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

    def _ansi_c(self, w: Word) -> None:
        j = self.i + 2
        s = self.s
        while j < len(s) and s[j] != "'":
            j += 2 if s[j] == "\\" else 1
        if j >= len(s):
            self.out.problems.append("unbalanced `$'` quote")
        w.mark_quoted()
        w.value += decode_ansi_c(s[self.i + 2:j])
        self.i = j + 1

    def _double_quoted_body(self, w: Word, until_quote: bool) -> None:
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

    def _expansion(self, w: Word) -> None:
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
            self.i = self._nested(s).parse_from(self.i + 2)
            w.value += "$(...)"
        elif s.startswith("${", self.i):
            end = self._matching_close(self.i + 2, "{", "}")
            problem = parameter_problem(s[self.i + 2:end])
            if problem:
                self.out.problems.append(problem)
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
        self._nested("".join(inner)).parse()
        self.i = j + 1
