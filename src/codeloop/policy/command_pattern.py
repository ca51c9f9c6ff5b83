"""The pattern of a `run(...)` rule, and which commands it admits as an allow rule: the
command itself (or a wrapper line whose wrapped program the rule names) with every exec form
of the command named by the rule's own words (`run(git rebase -x *)` names `-x`)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from codeloop.policy.shell import ExecForm, SimpleCommand, analyse


def _unescape(piece: str) -> str:
    return piece.replace("\\*", "*").replace("\\\\", "\\")


@dataclass(frozen=True)
class CommandPattern:
    """The pattern of a `run(...)` rule."""

    regex: re.Pattern[str] | None
    # Without a wildcard: the rule's text exactly as written (newlines kept), which allows
    # that whole command line and nothing else, however many commands it contains.
    exact: str | None
    words: frozenset[str] = frozenset()  # the rule's literal words: what it names
    head: str = ""  # the text before its first wildcard (all of it without one)
    wildcard: bool = True

    @classmethod
    def parse(cls, text: str) -> CommandPattern:
        raw = text.strip()
        text = " ".join(text.split())
        if text.endswith(":*"):  # Claude Code's prefix form: `npm test:*`
            base = _unescape(text[:-2].rstrip())
            return cls(re.compile(re.escape(base) + r"(?: .*)?", re.S), None,
                       frozenset(base.split()), base)
        pieces = [_unescape(p) for p in re.split(r"(?<!\\)\*", text)]
        if len(pieces) == 1:
            exact = _unescape(raw)
            words = frozenset(exact.split())
            if len(analyse(exact).commands) != 1:  # a whole line: it matches only as written
                return cls(None, exact, words, exact, False)
            return cls(re.compile(re.escape(pieces[0]), re.S), exact, words, pieces[0], False)
        words, head = _literal_words(pieces), pieces[0]
        if pieces[-1] == "" and pieces[-2].endswith(" "):  # `pytest *` also matches `pytest`
            body = ".*".join(map(re.escape, [*pieces[:-2], pieces[-2][:-1]]))
            return cls(re.compile(body + "(?: .*)?", re.S), None, words, head)
        return cls(re.compile(".*".join(map(re.escape, pieces)), re.S), None, words, head)

    def matches(self, cmd: SimpleCommand) -> bool:
        """Whether a deny or ask rule matches `cmd`: the command or its wrapper line, also
        through paths (`/usr/bin/curl` is `curl`)."""
        texts = [cmd.text, " ".join(cmd.full), " ".join((cmd.name, *cmd.argv[1:])),
                 " ".join((cmd.full[0].rsplit("/", 1)[-1], *cmd.full[1:]))]
        return self.regex is not None and any(self.regex.fullmatch(t) for t in texts)

    def admits(self, cmd: SimpleCommand) -> tuple[bool, ExecForm | str | None]:
        """Whether an allow rule admits `cmd`: its pattern matches the command itself (or the
        wrapper line, when the rule's literal text reaches the wrapped program's name), and
        it names every exec form of the command. Otherwise what stopped it, if anything."""
        if self.regex is None:
            return False, None
        if self.regex.fullmatch(cmd.text) is None:
            if cmd.full == cmd.argv or self.regex.fullmatch(" ".join(cmd.full)) is None:
                return False, None
            wrapped = " ".join(cmd.full[: len(cmd.full) - len(cmd.argv) + 1])
            if self.wildcard and not (self.head == wrapped or self.head.startswith(wrapped + " ")):
                return False, f"`{cmd.full[0]}` runs `{cmd.name}`"
        for form in cmd.forms:
            if self.wildcard and not self.words.intersection(form.names):
                return False, form
        return True, None


def _literal_words(pieces: list[str]) -> frozenset[str]:
    """The whole words of a wildcard pattern's literal pieces: a word glued to a `*` on its
    left is only part of a word; one glued on its right counts without a trailing `=`
    (`--exec=*` names `--exec`)."""
    words: set[str] = set()
    for k, piece in enumerate(pieces):
        tokens = piece.split()
        if k > 0 and tokens and not piece[0].isspace():
            tokens = tokens[1:]
        if k < len(pieces) - 1 and tokens and not piece[-1].isspace():
            tokens[-1] = tokens[-1].rstrip("=")
        words.update(t for t in tokens if t)
    return frozenset(words)
