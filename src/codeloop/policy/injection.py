"""A heuristic scanner for instructions injected into tool output (README text, comments,
test output, file names) that try to steer the agent.

Every pattern needs a signal that ordinary project text does not carry — words aimed at an
AI, chat-template markup, secrecy towards the user, a secret being sent somewhere — because a
flag on a normal README costs trust as surely as a miss does. Hits mark the output untrusted;
they do not block anything.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

_AI = (r"(?:ai|a\.i\.|llms?|large language models?|language models?|ai assistants?|assistants?|"
       r"ai agents?|coding agents?|agents?|bots?|chatbots?|copilot|claude|chatgpt|gpt(?:-?\d\w*)?|"
       r"gemini|codeloop|automated (?:agents?|tools?|systems?))")
_SECRET = (r"(?:api[ _-]?keys?|access[ _-]?keys?|tokens?|secrets?|credentials?|passwords?|"
           r"private[ _-]?keys?|ssh[ _-]?keys?|\.env\b|env(?:ironment)? var(?:iable)?s|"
           r"id_rsa|id_ed25519|\.aws|\.netrc|\.npmrc|\.pypirc|cookies?|session ids?)")
_SECRET_FILE = r"(?:\.env\b|id_rsa|id_ed25519|\.ssh/|\.aws/|credentials|\.netrc|\.npmrc|\.pypirc|\.git-credentials)"
_NET = r"(?:curl|wget|nc|ncat|netcat|socat|telnet|http|scp)"

_AI_ANCHORS = ("assistant", "agent", "llm", "language model", "claude", "chatgpt", "gpt",
               "copilot", "gemini", "codeloop", "chatbot", "automated", "ai ", "ai,", "ai:",
               "ais ", "a.i.", "bot ", "bot,", "bot:", "bots ")
_SECRET_FILE_ANCHORS = (".env", "id_rsa", "id_ed25519", ".ssh/", ".aws/", "credentials", ".netrc",
                        ".npmrc", ".pypirc", ".git-credentials")


@dataclass(frozen=True)
class _Pattern:
    """A regex plus the lowercase literals it cannot match without, and how far around an
    occurrence of one the match can reach. Anchors keep the scan at memchr speed: the regex
    only runs on small windows, never over the whole output."""

    kind: str
    regex: re.Pattern[str]
    anchors: tuple[str, ...]
    before: int
    after: int
    byte_anchors: tuple[bytes, ...]


def _p(kind: str, regex: str, anchors: tuple[str, ...], before: int = 80, after: int = 240) -> _Pattern:
    return _Pattern(kind, re.compile(regex, re.I), anchors, before, after,
                    tuple(a.encode("ascii") for a in anchors))


_PATTERNS: list[_Pattern] = [
    _p("override_instructions",
       r"\b(?:ignore|disregard|forget|override|overrule)\b[^.\n]{0,30}?"
       r"\b(?:previous|prior|above|earlier|preceding|foregoing|your|system|original|initial)\b"
       r"[^.\n]{0,25}?\b(?:instructions?|prompts?|directions|directives|guidelines|guardrails|"
       r"rules|system messages?|orders)\b",
       ("ignore", "disregard", "forget", "override", "overrule"), before=2, after=120),
    _p("new_instructions",
       r"\b(?:new|updated|real|actual|true|hidden|secret)\s+(?:system\s+)?"
       r"(?:instructions?|prompt|directives?)\s*(?:for (?:the )?" + _AI + r"\s*)?:",
       ("instruction", "prompt", "directive"), before=30, after=80),
    _p("addressed_to_ai",
       r"\b(?:attention|note|message|important|notice|reminder|request|memo)\s*"
       r"(?:to|for)\s+(?:the\s+|any\s+|all\s+|every\s+)?" + _AI + r"\b"
       r"|\binstructions?\s+(?:to|for)\s+(?:the\s+|any\s+|all\s+|every\s+)?" + _AI + r"\s*:",
       ("attention", "note", "message", "instruction", "important", "notice", "reminder",
        "request", "memo"), before=2, after=60),
    _p("addressed_to_ai", r"\bif you are (?:an?\s+|the\s+)?" + _AI + r"\b", ("if you are",),
       before=2, after=60),
    _p("addressed_to_ai",
       r"(?:^|[\n.!>])\s*(?:dear\s+|hey\s+|hello\s+|hi\s+)?" + _AI + r"\s*[,:]\s*"
       r"(?:you must|you are required|you need to|ignore|disregard|run|execute|send|upload|delete|"
       r"forget|immediately|do not tell)\b",
       _AI_ANCHORS, before=40, after=60),
    _p("addressed_to_ai",
       r"\bas an? " + _AI + r"\b[^.\n]{0,40}\byou (?:must|should|need to|are required to|have to)\b",
       ("you must", "you should", "you need to", "you are required to", "you have to"),
       before=80, after=30),
    _p("role_takeover",
       r"\byou are now (?:in\s+)?(?:an?\s+)?(?:dan\b|unrestricted|jailbroken|developer mode|"
       r"god mode|no longer bound|free of)|\b(?:enable|enter|activate)\s+(?:developer|god|dan)\s+mode\b",
       ("you are now", " mode"), before=20, after=60),
    _p("fake_markup",
       r"<\|(?:im_start|im_end|system|assistant|user|endoftext|begin_of_text|start_header_id|"
       r"end_header_id|eot_id)\|>|(?-i:\[/?INST\]|<</?SYS>>)|<start_of_turn>|"
       r"</?(?:system[-_]reminder|system[-_]prompt|tool[-_]call|tool[-_]result|tool[-_]use|"
       r"function[-_]calls?|function[-_]results?|invoke\s+name=)[^>\n]{0,60}>",
       ("<|", "inst]", "sys>>", "<start_of_turn>", "system-", "system_", "tool_", "tool-",
        "function_", "function-", "invoke"), before=2, after=80),
    _p("fake_markup", r"</?system>(?=[\s\S]{0,200}\b(?:you|must|ignore|instructions?|assistant)\b)",
       ("<system>", "</system>"), before=1, after=220),
    _p("conceal_from_user",
       r"\b(?:do not|don't|dont|never)\s+(?:tell|inform|mention (?:this )?to|reveal (?:this )?to|"
       r"show (?:this )?to|notify|alert|let)\s+(?:the\s+)?(?:user|human|developer|operator|reviewer|"
       r"owner)s?\b(?!\s+(?:to|how|that they)\b)|\bwithout (?:asking|telling|informing|notifying|"
       r"alerting)\s+(?:the\s+)?(?:user|human|developer|operator|reviewer)\b|\b(?:secretly|"
       r"covertly)\s+(?:run|execute|send|upload|post|delete|install|modify|exfiltrate|copy)\b"
       r"|\b(?:silently|quietly)\s+(?:send|upload|exfiltrate|transmit|leak)\b",
       ("do not", "don't", "dont", "never", "without", "silently", "secretly", "covertly",
        "quietly"), before=2, after=80),
    _p("exfiltration",
       r"\b" + _NET + r"\b[^\n]{0,200}?(?:@|\$\(\s*cat\s+|<\s*|`cat\s+)[~\w./$-]*" + _SECRET_FILE,
       _SECRET_FILE_ANCHORS, before=240, after=20),
    _p("exfiltration",
       r"\b(?:cat|base64|tar|zip|gzip|xxd)\s+[^\n|]*" + _SECRET_FILE + r"[^\n|]*\|\s*(?:\w+\s+)*?"
       + _NET + r"\b",
       _SECRET_FILE_ANCHORS, before=120, after=160),
    _p("exfiltration", r"\b(?:env|printenv)\s*\|\s*(?:\w+\s+)*?" + _NET + r"\b",
       ("env|", "env |", "printenv"), before=8, after=80),
    _p("exfiltration",
       r"\b(?:send|post|upload|exfiltrate|leak|forward|transmit|e-?mail|share|paste)\b[^.\n]{0,60}?"
       + _SECRET + r"[^.\n]{0,60}?\b(?:to|at|into)\s+(?:https?://|[\w-]+(?:\.[\w-]+)*\.[a-z]{2,}\b|"
       r"\S+@\S+|(?:my|our|this|the following) (?:server|endpoint|url|webhook|address))",
       ("key", "token", "secret", "credential", "password", ".env", "env var", "environment var",
        "id_rsa", "id_ed25519", ".aws", ".netrc", ".npmrc", ".pypirc", "cookie", "session id"),
       before=80, after=100),
]
_WORD_JOINERS = re.compile(r"(?<=[A-Za-z])[_\-+]+(?=[A-Za-z])")


@dataclass(frozen=True)
class Finding:
    """One suspicious passage: which kind, the line it is on, and an excerpt."""

    kind: str
    line: int
    excerpt: str


def scan(text: str, limit: int = 20) -> list[Finding]:
    """Findings in `text`, at most one per kind and line, at most `limit` in all."""
    if not text.isascii() and not unicodedata.is_normalized("NFKC", text):
        text = unicodedata.normalize("NFKC", text)  # fullwidth and math letters fold to ASCII
    lowered = text.lower()
    if len(lowered) != len(text):  # a few characters grow when lowered; keep offsets exact
        lowered = "".join(c.lower()[:1] or c for c in text)
    # ASCII bytes of the same length: bytes.find is the fastest substring search we have
    haystack = lowered.encode("ascii", "replace")
    found: dict[tuple[str, int], Finding] = {}
    positions: dict[bytes, list[int]] = {}
    for pattern in _PATTERNS:
        for start, end in _windows(haystack, pattern, positions):
            window = text[start:end]
            variants = [window]
            if "_" in window or "-" in window or "+" in window:
                spaced = _WORD_JOINERS.sub(" ", window)  # file names: ignore_previous_instructions
                if spaced != window:
                    variants.append(spaced)
            for variant in variants:
                for m in pattern.regex.finditer(variant):
                    line = text.count("\n", 0, start) + variant.count("\n", 0, m.start()) + 1
                    key = (pattern.kind, line)
                    if key not in found:
                        found[key] = Finding(pattern.kind, line, _excerpt(variant, m.start(), m.end()))
                        if len(found) >= limit:
                            return sorted(found.values(), key=lambda f: (f.line, f.kind))
    return sorted(found.values(), key=lambda f: (f.line, f.kind))


def _windows(haystack: bytes, pattern: _Pattern,
             positions: dict[bytes, list[int]]) -> list[tuple[int, int]]:
    """Merged spans around every anchor occurrence, where a match could lie."""
    spans: list[tuple[int, int]] = []
    size = len(haystack)
    for anchor in pattern.byte_anchors:
        if anchor not in positions:  # patterns share anchors: search each one once
            hits = positions[anchor] = []
            i = haystack.find(anchor)
            while i >= 0:
                hits.append(i)
                i = haystack.find(anchor, i + 1)
        for i in positions[anchor]:
            lo = i - pattern.before
            hi = i + len(anchor) + pattern.after
            spans.append((lo if lo > 0 else 0, hi if hi < size else size))
    spans.sort()
    merged: list[tuple[int, int]] = []
    for start, end in spans:
        if merged and start <= merged[-1][1]:
            if end > merged[-1][1]:
                merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    return merged


def _excerpt(text: str, start: int, end: int) -> str:
    snippet = text[max(0, start - 20): min(len(text), end + 20)]
    return " ".join(snippet.split())[:160]
