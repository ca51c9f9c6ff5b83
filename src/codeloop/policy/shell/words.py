"""A shell word as the lexer read it: its text plus how it was quoted and expanded."""

from __future__ import annotations

import re
from dataclasses import dataclass

ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\[[^\]]*\])?\+?=")


@dataclass
class Word:
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
        m = ASSIGNMENT.match(self.value)
        return m is not None and (self.quote_at < 0 or m.end() <= self.quote_at)
