"""Strip terminal escapes and hidden Unicode from tool output, and say what was removed;
or, for a person, show them escaped (`for_terminal`).

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
from collections.abc import Callable
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
    if m.group("tags") is not None:
        result.removed["tag_characters"] += end - start
        decoded = "".join(chr(ord(c) - 0xE0000) for c in m.group("tags") if 0xE0020 <= ord(c) <= 0xE007E)
        if decoded.strip():
            result.hidden_text.append(decoded)
            result.notes.append(f"hidden tag-character text {decoded[:80]!r}")
        return ""
    if m.group("vs") is not None:
        run = m.group("vs")
        if _benign(s, start, end):
            return run
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
        if _benign(s, start, end):
            return ch
        result.removed["zero_width"] += 1
        return ""
    result.removed["invisible_format"] += 1
    return ""


def _benign(s: str, start: int, end: int) -> bool:
    """Whether the invisible `s[start:end]` is ordinary spelling: one VS15/VS16 after a symbol
    or keycap base, an emoji ZWJ sequence (family, profession emoji), a ZWNJ inside a
    Persian or Indic word."""
    run = s[start:end]
    prev = s[start - 1] if start else ""
    nxt = s[end] if end < len(s) else ""
    if len(run) == 1 and "\ufe00" <= run <= "\ufe0f":
        return (bool(prev) and (ord(prev) > 0x7F or prev in "#*0123456789")
                and not _is_vs(prev) and not _is_vs(nxt))
    if run == "\u200d":
        return _emoji_base(prev) and _emoji_base(nxt)
    if run == "\u200c":
        return _letter(prev) and _letter(nxt)
    return False


def _is_vs(ch: str) -> bool:
    return bool(ch) and ("\ufe00" <= ch <= "\ufe0f" or "\U000e0100" <= ch <= "\U000e01ef")


def _emoji_base(ch: str) -> bool:
    if not ch:
        return False
    return unicodedata.category(ch) in ("So", "Sk") or ch == "\ufe0f" or 0x1F3FB <= ord(ch) <= 0x1F3FF


def _letter(ch: str) -> bool:
    return bool(ch) and ord(ch) > 0x7F and unicodedata.category(ch)[0] in "LM"


# Runs of anything but printable ASCII, tab, newline and a CR ending a line: plain text costs
# one regex scan; only these runs are looked at character by character.
_NOT_PLAIN = re.compile(r"(?:[^\t\n\r -~]|\r(?!\n))+")
_NOT_PLAIN_LINE = re.compile(r"[^ -~]+")
_NAMES = {"\x00": "NUL", "\x07": "BEL", "\x08": "BS", "\t": "TAB", "\n": "LF", "\x0b": "VT",
          "\x0c": "FF", "\r": "CR", "\x1b": "ESC", "\x7f": "DEL"}


def for_terminal(text: str, *, one_line: bool = False) -> str:
    """`text` (from a repository, a model or a tool) made safe to show a person: every control,
    escape, bidi, zero-width or otherwise invisible character is shown as `⟨ESC⟩`/`⟨U+202E⟩`.

    Nothing is dropped, so the reader sees that something was there; an escape sequence is
    inert once its ESC is shown. `one_line` also shows newlines and tabs (file names).
    """
    if not one_line and _plain(text):
        return text
    pattern = _NOT_PLAIN_LINE if one_line else _NOT_PLAIN
    return pattern.sub(lambda m: _mark_run(m, _visible), text)


def json_for_terminal(text: str) -> str:
    """JSON text (from `json.dumps(..., ensure_ascii=False)`) with the characters that
    `for_terminal` would show escaped written as `\\uXXXX` instead: the same JSON value, inert
    on a terminal, and other non-ASCII text stays readable."""
    if _plain(text):
        return text
    return _NOT_PLAIN.sub(lambda m: _mark_run(m, _json_escape), text)


def _mark_run(m: re.Match[str], render: Callable[[str], str]) -> str:
    run = m.group()
    if run.isprintable() and not _PRINTABLE_HIDDEN.search(run):
        return run  # letters, symbols and emoji of any script
    s, base = m.string, m.start()
    return "".join(
        ch if (ch.isprintable() and not _PRINTABLE_HIDDEN.match(ch)) or _benign(s, base + i, base + i + 1)
        else render(ch)
        for i, ch in enumerate(run))


def _visible(ch: str) -> str:
    return f"⟨{_NAMES.get(ch) or f'U+{ord(ch):04X}'}⟩"


def _json_escape(ch: str) -> str:
    code = ord(ch)
    if code > 0xFFFF:  # JSON spells astral characters as a surrogate pair
        code -= 0x10000
        return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
    return f"\\u{code:04x}"
