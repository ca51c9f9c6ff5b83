"""What may become a long-term memory: checked before anything is stored.

A memory is read by every later session on the repository, so it is a way to carry text
from one context into many. It is refused when it:
- looks like instructions to an AI, or carries terminal escapes or hidden characters;
- holds a secret: a known credential shape, or the value of a secret-named environment
  variable, also reversed, with separators in it, or base64/hex encoded;
- copies tool output: 64 or more characters (whitespace folded) found verbatim in a tool
  result of the session it is written from. A memory says what was learnt, in its own words.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import re
from collections.abc import Iterable
from dataclasses import dataclass

from codeloop.errors import CodeloopError
from codeloop.memory.records import MAX_TEXT_CHARS
from codeloop.policy.redact import Redactor
from codeloop.policy.untrusted import inspect

VERBATIM_CHARS = 64
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_SPACE = re.compile(r"\s+")
_NOT_ALNUM = re.compile(r"[^A-Za-z0-9]")
_BASE64_RUN = re.compile(r"[A-Za-z0-9+/_-]{12,}={0,2}")
_HEX_RUN = re.compile(r"(?:[0-9a-fA-F]{2}){8,}")
# Occurrences of one piece looked at per tool output: enough for real text, bounded for
# output that repeats a short line thousands of times.
_MAX_OCCURRENCES = 50


class MemoryRefusedError(CodeloopError):
    """A memory was not stored; the message says why."""


@dataclass(frozen=True)
class MemoryGuard:
    """Checks memory text; `redactor` knows the user's secret values."""

    redactor: Redactor

    def check(self, text: str, tool_outputs: Iterable[str] = (), *,
              redact: bool = False) -> str:
        """The text to store, or MemoryRefusedError. With `redact` (captures of what a
        person typed), a secret in a recognised form is replaced by a marker instead."""
        text = text.strip()
        if not text:
            raise MemoryRefusedError("the memory is empty", "say what is worth remembering")
        if len(text) > MAX_TEXT_CHARS:
            raise MemoryRefusedError(
                f"the memory is {len(text)} characters; at most {MAX_TEXT_CHARS}",
                "keep one memory to one short fact or lesson")
        if _CONTROL.search(text):
            raise MemoryRefusedError("the memory contains control characters or terminal "
                                     "escapes", "store plain text")
        seen = inspect(text)
        if seen.flags:
            raise MemoryRefusedError(
                "the memory looks like instructions to an AI or hides text "
                f"({', '.join(seen.flags)})",
                "a memory states a fact about the project or a lesson; it cannot instruct")
        found = self.redactor.redact(text)
        if found and not redact:
            raise MemoryRefusedError(
                f"the memory contains a secret ({', '.join(sorted(found.found))})",
                "refer to a secret by its name, never its value")
        text = found.text
        hidden = self._encoded_secret(text)
        if hidden:
            raise MemoryRefusedError(f"the memory contains a secret ({hidden}, encoded or "
                                     "split)", "refer to a secret by its name, never its value")
        copied = copied_length(text, tool_outputs)
        if copied:
            raise MemoryRefusedError(
                f"the memory copies {copied} characters of tool output verbatim",
                "a memory is what was learnt, in your own words, not output pasted in")
        return text

    def _encoded_secret(self, text: str) -> str | None:
        """The label of a secret value hidden in the text another way than as itself."""
        values = self.redactor.secret_values()
        if not values:
            return None
        squeezed = _NOT_ALNUM.sub("", text)
        decoded = _decoded_runs(text)
        for value, label in values:
            core = _NOT_ALNUM.sub("", value)
            forms = [value[::-1]] + ([core, core[::-1]] if len(core) >= 8 else [])
            if any(form in text or form in squeezed for form in forms):
                return label
            raw = value.encode()
            if any(raw in blob or raw[::-1] in blob for blob in decoded):
                return label
        return None


def _decoded_runs(text: str) -> list[bytes]:
    """Bytes that base64 or hex runs in the text decode to (every alignment of base64)."""
    out: list[bytes] = []
    for run in _HEX_RUN.findall(text):
        with contextlib.suppress(ValueError):
            out.append(bytes.fromhex(run))
    for run in _BASE64_RUN.findall(text):
        body = run.rstrip("=").replace("-", "+").replace("_", "/")
        for start in range(4):
            piece = body[start:]
            piece = piece[: len(piece) - len(piece) % 4]
            with contextlib.suppress(binascii.Error, ValueError):
                out.append(base64.b64decode(piece, validate=True))
    return out


def copied_length(text: str, outputs: Iterable[str], minimum: int = VERBATIM_CHARS) -> int:
    """The length of a run of `minimum` or more characters of `text` that appears verbatim
    in one of `outputs` (whitespace folded to one space); 0 when there is none.

    Every such run contains one of the text's pieces of `minimum // 2` characters that start
    at a multiple of that length, so only those pieces are searched for, then grown."""
    mine = _SPACE.sub(" ", text)
    step = max(minimum // 2, 1)
    if len(mine) < minimum:
        return 0
    pieces = [(at, mine[at:at + step]) for at in range(0, len(mine) - step + 1, step)]
    for output in outputs:
        theirs = _SPACE.sub(" ", output)
        if len(theirs) < minimum:
            continue
        for at, piece in pieces:
            found = theirs.find(piece)
            count = 0
            while found >= 0 and count < _MAX_OCCURRENCES:
                length = _grown(mine, at, theirs, found, step)
                if length >= minimum:
                    return length
                found = theirs.find(piece, found + 1)
                count += 1
    return 0


def _grown(mine: str, at: int, theirs: str, found: int, size: int) -> int:
    """The length of the common run around a match of `size` characters."""
    left = 0
    while at - left > 0 and found - left > 0 and mine[at - left - 1] == theirs[found - left - 1]:
        left += 1
    right = size
    while at + right < len(mine) and found + right < len(theirs) \
            and mine[at + right] == theirs[found + right]:
        right += 1
    return left + right
