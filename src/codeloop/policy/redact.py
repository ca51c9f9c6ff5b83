"""Redact secrets from text before it enters the event log or a model's context.

Two passes, both linear in the text: a substring search for the values of the user's own
secret-named environment variables (which have no shape to recognise), then one compiled
regex for credentials that have one (API keys, tokens, private-key blocks), run only around
the literal starts those shapes cannot do without.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

T = TypeVar("T")

# Environment variable names whose values are secrets; shorter values are too likely to be
# ordinary text ("1", "true", "dev") to be worth hiding everywhere they occur.
_SECRET_NAME_PARTS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL")
MIN_SECRET_LENGTH = 8

# Characters a token is made of: a match must not start or end inside a longer word.
_NOT_TOKEN_BEFORE = r"(?<![A-Za-z0-9_-])"
_NOT_TOKEN_AFTER = r"(?![A-Za-z0-9_-])"
_B64 = r"[A-Za-z0-9+/]"

_SHAPES = re.compile(
    # A private-key block to its END line; without one (output cut short), the BEGIN line and
    # the base64 lines after it.
    r"(?P<private_key>-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----"
    r"(?:[\s\S]{0,65536}?-----END[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----"
    r"|(?:\r?\n[^\n]{0,80}?" + _B64 + r"{16,}={0,2}[ \t]*(?=\r?\n|\Z))*))"
    r"|" + _NOT_TOKEN_BEFORE + r"(?:"
    r"(?P<anthropic_key>sk-ant-[A-Za-z0-9_-]{20,})"
    r"|(?P<openai_key>sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,})"
    r"|(?P<stripe_key>[sr]k_live_[A-Za-z0-9]{20,})"
    r"|(?P<github_token>gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})"
    r"|(?P<slack_token>xox[abposr]-[A-Za-z0-9-]{10,})"
    r"|(?P<google_api_key>AIza[A-Za-z0-9_-]{35})"
    r")" + _NOT_TOKEN_AFTER +
    # An AWS access key id, and the secret key when it follows on the same line (a CSV row,
    # `aws configure list`, an env dump); a labelled secret key anywhere.
    r"|(?<![A-Z0-9])(?P<aws_access_key_id>(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16})(?![A-Z0-9])"
    r"(?:(?P<aws_gap>[^\n]{1,80}?)(?<!" + _B64[:-1] + r"=])"
    r"(?P<aws_secret_key>" + _B64 + r"{40})(?!" + _B64 + r"))?"
    r"|(?i:aws_?secret_?(?:access_?)?key)[\"']?\s*[:=]\s*[\"']?"
    r"(?P<aws_secret_labelled>" + _B64 + r"{40})(?!" + _B64 + r")"
)
_LABELS = {
    "private_key": "private key",
    "anthropic_key": "anthropic api key",
    "openai_key": "openai api key",
    "stripe_key": "stripe key",
    "github_token": "github token",
    "slack_token": "slack token",
    "google_api_key": "google api key",
    "aws_access_key_id": "aws access key id",
    "aws_secret_key": "aws secret key",
    "aws_secret_labelled": "aws secret key",
}


def marker(label: str) -> str:
    return f"[redacted: {label}]"


@dataclass
class Redacted:
    """Text with its secrets replaced, and how many of each kind were found."""

    text: str
    found: Counter[str] = field(default_factory=Counter)

    def __bool__(self) -> bool:
        return bool(self.found)

    def note(self) -> str:
        """What the model is told: that something was withheld, and what kind of thing."""
        total = sum(self.found.values())
        kinds = ", ".join(sorted(self.found))
        return (f"[codeloop: {total} secret{'s' if total != 1 else ''} redacted from this text "
                f"({kinds}). The values are withheld on purpose: do not try to print or "
                "recover them; refer to them by name.]")


class Redactor:
    """Finds known secret shapes and the given secret values; build once, use per output."""

    def __init__(self, values: Mapping[str, str] | None = None) -> None:
        # Longest first, so a value containing another is replaced whole.
        usable = {v: label for label, v in (values or {}).items()
                  if len(v.strip()) >= MIN_SECRET_LENGTH}
        self._values = sorted(usable.items(), key=lambda item: -len(item[0]))

    @classmethod
    def from_environment(cls, env: Mapping[str, str] | None = None,
                         extra: Iterable[tuple[str, str | None]] = ()) -> Redactor:
        """The values of the user's secret-named variables, plus `extra` (label, value) pairs
        such as the API key from the config file."""
        env = os.environ if env is None else env
        values = {f"value of ${name}": value for name, value in env.items()
                  if any(part in name.upper() for part in _SECRET_NAME_PARTS)}
        values.update({label: value for label, value in extra if value})
        return cls(values)

    def secret_values(self) -> list[tuple[str, str]]:
        """(value, label) of every secret value it hides, longest first."""
        return list(self._values)

    def redact(self, text: str) -> Redacted:
        out = Redacted(text)
        if not text:
            return out
        for value, label in self._values:
            if value in text:  # a C substring search: cheap even on megabytes
                out.found[label] += text.count(value)
                text = text.replace(value, marker(label))
        out.text = _redact_shapes(text, out.found)
        return out

    def redact_data(self, data: T, found: Counter[str]) -> T:
        """A copy of JSON-like `data` with every string redacted; counts go into `found`."""
        return cast(T, self._redact_any(data, found))

    def _redact_any(self, data: Any, found: Counter[str]) -> Any:
        if isinstance(data, str):
            result = self.redact(data)
            found.update(result.found)
            return result.text
        if isinstance(data, dict):
            return {k: self._redact_any(v, found) for k, v in data.items()}
        if isinstance(data, list | tuple):
            return type(data)(self._redact_any(v, found) for v in data)
        return data


# Literal starts of the shapes, and how far past one a match can reach: the regex runs only
# on windows around these, so output without any (most of it) costs a few substring searches.
_ANCHORS: tuple[tuple[str, int], ...] = (
    ("-----BEGIN", 66_000), ("sk-", 300), ("k_live_", 300), ("ghp_", 300), ("gho_", 300),
    ("ghu_", 300), ("ghs_", 300), ("ghr_", 300), ("github_pat_", 300), ("xox", 300),
    ("AIza", 100), ("AKIA", 200), ("ASIA", 200), ("ABIA", 200), ("ACCA", 200),
    ("aws", 200), ("AWS", 200), ("Aws", 200),
)
_BEFORE = 16  # a match may start a little before its anchor (the `s` of `sk_live_`)


def _windows(text: str) -> list[tuple[int, int]]:
    """Merged spans of `text` around every anchor occurrence, where a match could lie."""
    spans: list[tuple[int, int]] = []
    for anchor, after in _ANCHORS:
        i = text.find(anchor)
        while i >= 0:
            spans.append((max(0, i - _BEFORE), min(len(text), i + after)))
            i = text.find(anchor, i + 1)
    spans.sort()
    merged: list[tuple[int, int]] = []
    for start, end in spans:
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def _redact_shapes(text: str, found: Counter[str]) -> str:
    pieces: list[str] = []
    done = 0
    for start, end in _windows(text):
        # `finditer` on the whole string from `start`: lookbehinds still see what precedes it.
        for m in _SHAPES.finditer(text, max(start, done), end):
            pieces += [text[done:m.start()], _replace(m, found)]
            done = m.end()
    return "".join(pieces) + text[done:] if pieces else text


def _replace(m: re.Match[str], found: Counter[str]) -> str:
    if m.group("aws_access_key_id") is not None:
        found["aws access key id"] += 1
        text = marker("aws access key id")
        if m.group("aws_secret_key") is not None:
            found["aws secret key"] += 1
            text += m.group("aws_gap") + marker("aws secret key")
        return text
    if m.group("aws_secret_labelled") is not None:
        found["aws secret key"] += 1
        start = m.start("aws_secret_labelled") - m.start()
        return m.group()[:start] + marker("aws secret key")
    kind = next(k for k, v in m.groupdict().items() if v is not None and k in _LABELS)
    found[_LABELS[kind]] += 1
    return marker(_LABELS[kind])
