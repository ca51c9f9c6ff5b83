"""The file being edited, split into lines, with normalised keys and line lookups cached."""

from __future__ import annotations

from typing import TYPE_CHECKING

from codeloop.edit.matching.base import KeyFn
from codeloop.edit.normalize import key_fold
from codeloop.edit.textfile import normalize_newlines

if TYPE_CHECKING:
    from codeloop.edit.matching.fuzzy import Scan


class Document:
    """A file split into lines, with per-normalisation keys computed once and on demand."""

    def __init__(self, text: str) -> None:
        self.trailing = text.endswith("\n") or text == ""
        body = text[:-1] if text.endswith("\n") else text
        self.body = body
        self.lines = body.split("\n") if text else []
        self.ascii = text.isascii()
        self._non_ascii: list[int] | None = None
        self._keys: dict[KeyFn, list[str]] = {}
        self._index: dict[tuple[KeyFn, bool], tuple[list[int], str]] = {}
        self.scans: dict[tuple[tuple[str, ...], float], Scan | None] = {}

    def keys(self, fn: KeyFn) -> list[str]:
        if fn not in self._keys:
            if fn is key_fold:
                # str.translate with a dict is slow per character; only non-ASCII lines
                # can change when folded.
                self._keys[fn] = [line.strip() if line.isascii() else key_fold(line)
                                  for line in self.lines]
            else:
                self._keys[fn] = [fn(line) for line in self.lines]
        return self._keys[fn]

    def index(self, fn: KeyFn, nonblank: bool) -> tuple[list[int], str]:
        """(file line of each indexed line, their keys joined and newline-terminated)."""
        token = (fn, nonblank)
        if token not in self._index:
            keys = self.keys(fn)
            rows = [i for i, k in enumerate(keys) if k] if nonblank else list(range(len(keys)))
            picked = [keys[i] for i in rows] if nonblank else keys
            self._index[token] = (rows, "\n".join(picked) + "\n")
        return self._index[token]

    def find(self, fn: KeyFn, needle: list[str], nonblank: bool = False) -> list[int]:
        """Positions (in the index's rows) where `needle` keys occur as consecutive lines."""
        rows, hay = self.index(fn, nonblank)
        if not needle or not rows:
            return []
        pattern = "\n".join(needle) + "\n"
        found, at, line, prev = [], hay.find(pattern), 0, 0
        while at != -1:
            if at == 0 or hay[at - 1] == "\n":
                line += hay.count("\n", prev, at)
                prev = at
                found.append(line)
            at = hay.find(pattern, at + 1)
        return found

    def non_ascii_lines(self) -> list[int]:
        if self._non_ascii is None:
            self._non_ascii = [] if self.ascii else [i for i, x in enumerate(self.lines)
                                                     if not x.isascii()]
        return self._non_ascii

    def lines_containing(self, needle: str) -> list[int]:
        """Indices of lines whose raw text contains `needle`, found by str.find over the text."""
        out: list[int] = []
        body, line, prev = self.body, 0, 0
        at = body.find(needle)
        while at != -1:
            line += body.count("\n", prev, at)
            prev = at
            out.append(line)
            eol = body.find("\n", at)
            at = body.find(needle, eol + 1) if eol != -1 else -1
        return out

    def render(self, lines: list[str]) -> str:
        if not lines:
            return ""
        return "\n".join(lines) + ("\n" if self.trailing else "")


def split_lines(text: str) -> list[str]:
    """Lines of model-supplied text; one final newline does not make an extra empty line."""
    text = normalize_newlines(text)
    if not text:
        return []
    return (text[:-1] if text.endswith("\n") else text).split("\n")


def anchor_key(keys: list[str]) -> int | None:
    """The search line to look for with str.find: its key is a substring of any matching line
    (folded lines aside, see `anchor_lines`). None when all keys are empty."""
    k = max(range(len(keys)), key=lambda i: len(keys[i]))
    return k if keys[k] else None


def anchor_lines(doc: Document, fn: KeyFn, key: str) -> list[int]:
    """Lines that may match `key` under `fn`: those containing it, and under folding also
    the non-ASCII lines, whose folded form may contain it when their raw text does not."""
    found = doc.lines_containing(key)
    if fn is key_fold and not doc.ascii:
        found = sorted(set(found) | set(doc.non_ascii_lines()))
    return found
