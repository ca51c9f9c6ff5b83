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

_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("override_instructions", re.compile(
        r"\b(?:ignore|disregard|forget|override|overrule)\b[^.\n]{0,30}?"
        r"\b(?:previous|prior|above|earlier|preceding|foregoing|your|system|original|initial)\b"
        r"[^.\n]{0,25}?\b(?:instructions?|prompts?|directions|directives|guidelines|guardrails|"
        r"rules|system messages?|orders)\b", re.I)),
    ("new_instructions", re.compile(
        r"\b(?:new|updated|real|actual|true|hidden|secret)\s+(?:system\s+)?"
        r"(?:instructions?|prompt|directives?)\s*(?:for (?:the )?" + _AI + r"\s*)?:", re.I)),
    ("addressed_to_ai", re.compile(
        r"\b(?:attention|note|message|instructions?|important|notice|reminder|request|memo)\s*"
        r"(?:to|for)\s+(?:the\s+|any\s+|all\s+|every\s+)?" + _AI + r"\b", re.I)),
    ("addressed_to_ai", re.compile(
        r"\bif you are (?:an?\s+|the\s+)?" + _AI + r"\b", re.I)),
    ("addressed_to_ai", re.compile(
        r"(?:^|[\n.!>])\s*(?:dear\s+|hey\s+|hello\s+|hi\s+)?" + _AI + r"\s*[,:]\s*"
        r"(?:you must|you are required|you need to|ignore|disregard|run|execute|send|upload|delete|"
        r"forget|immediately|do not tell)\b", re.I)),
    ("addressed_to_ai", re.compile(
        r"\bas an? " + _AI + r"\b[^.\n]{0,40}\byou (?:must|should|need to|are required to|have to)\b",
        re.I)),
    ("role_takeover", re.compile(
        r"\byou are now (?:in\s+)?(?:an?\s+)?(?:dan\b|unrestricted|jailbroken|developer mode|"
        r"god mode|no longer bound|free of)|\b(?:enable|enter|activate)\s+(?:developer|god|dan)\s+mode\b",
        re.I)),
    ("fake_markup", re.compile(
        r"<\|(?:im_start|im_end|system|assistant|user|endoftext|begin_of_text|start_header_id|"
        r"end_header_id|eot_id)\|>|\[/?INST\]|<</?SYS>>|<start_of_turn>|"
        r"</?(?:system[-_]reminder|system[-_]prompt|tool[-_]call|tool[-_]result|tool[-_]use|"
        r"function[-_]calls?|function[-_]results?|invoke\s+name=)[^>\n]{0,60}>", re.I)),
    ("fake_markup", re.compile(
        r"</?system>(?=[\s\S]{0,200}\b(?:you|must|ignore|instructions?|assistant)\b)", re.I)),
    ("conceal_from_user", re.compile(
        r"\b(?:do not|don't|dont|never)\s+(?:tell|inform|mention (?:this )?to|reveal (?:this )?to|"
        r"show (?:this )?to|notify|alert|let)\s+(?:the\s+)?(?:user|human|developer|operator|reviewer|"
        r"owner)s?\b|\bwithout (?:asking|telling|informing|notifying|alerting)\s+(?:the\s+)?"
        r"(?:user|human|developer|operator|reviewer)\b|\b(?:silently|secretly|covertly|quietly)\s+"
        r"(?:run|execute|send|upload|post|delete|install|modify|exfiltrate|copy)\b", re.I)),
    ("exfiltration", re.compile(
        r"\b" + _NET + r"\b[^\n]{0,200}?(?:@|\$\(\s*cat\s+|<\s*|`cat\s+)[~\w./$-]*" + _SECRET_FILE,
        re.I)),
    ("exfiltration", re.compile(
        r"\b(?:cat|base64|tar|zip|gzip|xxd)\s+[^\n|]*" + _SECRET_FILE + r"[^\n|]*\|\s*(?:\w+\s+)*?"
        + _NET + r"\b", re.I)),
    ("exfiltration", re.compile(r"\b(?:env|printenv)\s*\|\s*(?:\w+\s+)*?" + _NET + r"\b", re.I)),
    ("exfiltration", re.compile(
        r"\b(?:send|post|upload|exfiltrate|leak|forward|transmit|e-?mail|share|paste)\b[^.\n]{0,60}?"
        + _SECRET + r"[^.\n]{0,60}?\b(?:to|at|into)\s+(?:https?://|[\w-]+(?:\.[\w-]+)*\.[a-z]{2,}\b|"
        r"\S+@\S+|(?:my|our|this|the following) (?:server|endpoint|url|webhook|address))", re.I)),
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
    found: dict[tuple[str, int], Finding] = {}
    normal = unicodedata.normalize("NFKC", text)
    variants = [normal]
    spaced = _WORD_JOINERS.sub(" ", normal)  # file names: ignore_previous_instructions.md
    if spaced != normal:
        variants.append(spaced)
    for variant in variants:
        for kind, pattern in _PATTERNS:
            for m in pattern.finditer(variant):
                line = variant.count("\n", 0, m.start()) + 1
                key = (kind, line)
                if key not in found:
                    found[key] = Finding(kind, line, _excerpt(variant, m.start(), m.end()))
                if len(found) >= limit:
                    return sorted(found.values(), key=lambda f: (f.line, f.kind))
    return sorted(found.values(), key=lambda f: (f.line, f.kind))


def _excerpt(text: str, start: int, end: int) -> str:
    snippet = text[max(0, start - 20): min(len(text), end + 20)]
    return " ".join(snippet.split())[:160]
