"""Strip terminal escapes and hidden Unicode from tool output, and say what was removed.

Hidden payloads (Unicode tag characters, variation-selector byte smuggling, OSC 52
clipboard data) are decoded and returned so the injection scanner can read what a human
reviewer would never have seen.
"""

from __future__ import annotations

import base64
import binascii
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass, field

# Categories that legitimate program output does not need; their presence marks the output.
SUSPICIOUS = frozenset({
    "osc_title", "osc52_clipboard", "osc8_link", "osc_other", "device_string",
    "c1_control", "concealed_text", "bidi_control", "zero_width", "invisible_format",
    "tag_characters", "variation_selectors",
})

_HIDDEN_ANY = re.compile(
    r"[\U000e0000-\U000e01ef\ufe00-\ufe0f\u202a-\u202e\u2066-\u2069\u200b-\u200f\u061c\u2060"
    r"\ufeff\u180e\u00ad\u034f\u115f\u1160\u17b4\u17b5\u2061-\u2064\u206a-\u206f\u3164\uffa0"
    r"\ufff9-\ufffb]")
_PRINTABLE_HIDDEN = re.compile(
    r"[\u034f\u115f\u1160\u17b4\u17b5\u3164\uffa0\ufe00-\ufe0f\U000e0100-\U000e01ef]")
_ESCAPES = re.compile(
    r"(?P<osc>(?:\x1b\]|\x9d)(?P<osc_body>[^\x07\x1b\x9c\n]*)(?:\x07|\x1b\\|\x9c)?)"
    r"|(?P<dcs>(?:\x1b[PX^_]|[\x90\x98\x9e\x9f])[^\x1b\x9c\n]*(?:\x1b\\|\x9c)?)"
    r"|(?P<csi>(?:\x1b\[|\x9b)(?P<params>[0-?]*)[ -/]*(?P<final>[@-~])?)"
    r"|(?P<esc>\x1b[ -/]*[0-~]?)"
)
_SGR = re.compile(r"\x1b\[[0-9;:]*m")
_SGR_WITH_8 = re.compile(r"\x1b\[((?:[0-9:]*;)*8(?:;[0-9;:]*)?)m")
_C1 = re.compile(r"[\x80-\x9f]")
_C0 = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_LONE_CR = re.compile(r"\r(?!\n)")
_HIDDEN = re.compile(
    r"(?P<tags>[\U000e0000-\U000e007f]+)"
    r"|(?P<vs>[\ufe00-\ufe0f\U000e0100-\U000e01ef]+)"
    r"|(?P<bidi>[\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c])"
    r"|(?P<zw>[\u200b-\u200d\u2060\ufeff\u180e])"
    r"|(?P<inv>[\u00ad\u034f\u115f\u1160\u17b4\u17b5\u2061-\u2064\u206a-\u206f\u3164\uffa0\ufff9-\ufffb])"
)


@dataclass
class ScrubResult:
    """Clean text, counts of what was removed by category, and decoded hidden payloads."""

    text: str
    removed: Counter[str] = field(default_factory=Counter)
    hidden_text: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def suspicious(self) -> bool:
        return any(self.removed[c] for c in SUSPICIOUS)

    def summary(self) -> str:
        return ", ".join(f"{n} {c.replace('_', ' ')}" for c, n in sorted(self.removed.items()))


def scrub(text: str) -> ScrubResult:
    """Remove escapes and hidden characters from `text`."""
    result = ScrubResult(text)
    if _plain(text):
        return result
    ascii_only = text.isascii()
    has_c1 = not ascii_only and _C1.search(text) is not None
    if "\x1b[" in text:  # colours are most escapes by far: strip them without a callback each
        concealed = sum(_conceals(params) for params in _SGR_WITH_8.findall(text))
        text, n = _SGR.subn("", text)
        if concealed:
            result.removed["concealed_text"] += concealed
        if n > concealed:
            result.removed["color"] += n - concealed
    if "\x1b" in text or has_c1:
        text = _ESCAPES.sub(lambda m: _escape(m, result), text)
    if has_c1:
        text = _count_sub(_C1, "c1_control", text, result)
    if "\r" in text:
        text = text.replace("\r\n", "\n")
        text = _count_sub(_LONE_CR, "carriage_return", text, result, "\n")
    text = _count_sub(_C0, "c0_control", text, result)
    if not ascii_only and _HIDDEN_ANY.search(text):
        text = _HIDDEN.sub(lambda m: _hidden(m, result), text)
    result.text = text
    return result


def _plain(text: str) -> bool:
    """True when nothing needs removing: `isprintable` rejects controls and format characters
    in C; the few invisible characters it accepts are checked separately."""
    if not text.replace("\n", "").replace("\t", "").isprintable():
        return False
    return text.isascii() or not _PRINTABLE_HIDDEN.search(text)


def _conceals(params: str) -> bool:
    """Whether SGR parameters include 8 (conceal) rather than a 256-colour or RGB argument."""
    codes = params.split(";")
    i = 0
    while i < len(codes):
        if codes[i] in ("38", "48", "58"):
            i += 3 if codes[i + 1:i + 2] == ["5"] else 5
            continue
        if codes[i] == "8":
            return True
        i += 1
    return False


def _count_sub(pattern: re.Pattern[str], category: str, text: str, result: ScrubResult,
               repl: str = "") -> str:
    new, n = pattern.subn(repl, text)
    if n:
        result.removed[category] += n
    return new


def _escape(m: re.Match[str], result: ScrubResult) -> str:
    if m.group("osc") is not None:
        body = m.group("osc_body")
        code = body.split(";", 1)[0]
        if code in ("0", "1", "2"):
            result.removed["osc_title"] += 1
            result.notes.append(f"terminal title set to {body[2:][:80]!r}")
        elif code == "52":
            result.removed["osc52_clipboard"] += 1
            payload = body.rsplit(";", 1)[-1]
            try:
                decoded = base64.b64decode(payload, validate=True).decode("utf-8", "replace")
            except (binascii.Error, ValueError):
                decoded = payload
            result.hidden_text.append(decoded)
            result.notes.append(f"clipboard write of {decoded[:80]!r}")
        elif code == "8":
            result.removed["osc8_link"] += 1
            url = body.split(";", 2)[-1]
            if url:
                result.notes.append(f"hidden link target {url[:200]!r}")
        else:
            result.removed["osc_other"] += 1
        return ""
    if m.group("dcs") is not None:
        result.removed["device_string"] += 1
        return ""
    if m.group("csi") is not None:
        if m.group("final") == "m" and _conceals(m.group("params")):
            result.removed["concealed_text"] += 1
        elif m.group("final") == "m":
            result.removed["color"] += 1
        else:
            result.removed["cursor_control"] += 1
        return ""
    result.removed["escape"] += 1
    return ""


def _hidden(m: re.Match[str], result: ScrubResult) -> str:
    s, start, end = m.string, m.start(), m.end()
    prev = s[start - 1] if start else ""
    nxt = s[end] if end < len(s) else ""
    if m.group("tags") is not None:
        result.removed["tag_characters"] += end - start
        decoded = "".join(chr(ord(c) - 0xE0000) for c in m.group("tags") if 0xE0020 <= ord(c) <= 0xE007E)
        if decoded.strip():
            result.hidden_text.append(decoded)
            result.notes.append(f"hidden tag-character text {decoded[:80]!r}")
        return ""
    if m.group("vs") is not None:
        run = m.group("vs")
        if len(run) == 1 and run < "\U000e0100" and prev and (ord(prev) > 0x7F or prev in "#*0123456789"):
            return run  # one VS15/VS16 after a symbol or keycap base: ordinary emoji spelling
        result.removed["variation_selectors"] += len(run)
        if len(run) > 1:
            data = bytes((ord(c) - 0xFE00) if c < "\U000e0100" else (ord(c) - 0xE0100 + 16) for c in run)
            decoded = data.decode("utf-8", "replace")
            result.hidden_text.append(decoded)
            result.notes.append(f"text smuggled in variation selectors {decoded[:80]!r}")
        return ""
    if m.group("bidi") is not None:
        result.removed["bidi_control"] += 1
        return ""
    if m.group("zw") is not None:
        ch = m.group("zw")
        if ch == "\ufeff" and start == 0:
            result.removed["byte_order_mark"] += 1
            return ""
        if ch == "\u200d" and _emoji_base(prev) and _emoji_base(nxt):
            return ch  # emoji ZWJ sequence (family, profession emoji)
        if ch == "\u200c" and _letter(prev) and _letter(nxt):
            return ch  # ZWNJ inside Persian/Indic words
        result.removed["zero_width"] += 1
        return ""
    result.removed["invisible_format"] += 1
    return ""


def _emoji_base(ch: str) -> bool:
    if not ch:
        return False
    return unicodedata.category(ch) in ("So", "Sk") or ch == "\ufe0f" or 0x1F3FB <= ord(ch) <= 0x1F3FF


def _letter(ch: str) -> bool:
    return bool(ch) and ord(ch) > 0x7F and unicodedata.category(ch)[0] in "LM"
