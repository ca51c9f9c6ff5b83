"""`for_terminal` and `json_for_terminal`: foreign text shown to a person with every control,
escape and invisible character visible, nothing dropped, ordinary text untouched."""

from __future__ import annotations

import json
import random
import re
import time

import pytest

from codeloop.policy.scrub import for_terminal, json_for_terminal

# What a terminal would obey or a reader could not see; none may survive `for_terminal`.
FORBIDDEN = re.compile(
    "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u00a0\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180e"
    "\u200b-\u200f\u2028-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff9-\ufffb"
    "\U000e0000-\U000e01ef\ud800-\udfff]|\r(?!\n)")

DANGEROUS = {
    "\x1b": "⟨ESC⟩", "\x07": "⟨BEL⟩", "\x08": "⟨BS⟩", "\x00": "⟨NUL⟩", "\x7f": "⟨DEL⟩",
    "\x0b": "⟨VT⟩", "\x0c": "⟨FF⟩", "\r": "⟨CR⟩", "\x01": "⟨U+0001⟩", "\x9b": "⟨U+009B⟩",
    "\x9d": "⟨U+009D⟩", "\x85": "⟨U+0085⟩", "\u202e": "⟨U+202E⟩", "\u202a": "⟨U+202A⟩",
    "\u2066": "⟨U+2066⟩", "\u2069": "⟨U+2069⟩", "\u200e": "⟨U+200E⟩", "\u200f": "⟨U+200F⟩",
    "\u061c": "⟨U+061C⟩", "\u200b": "⟨U+200B⟩", "\u200d": "⟨U+200D⟩", "\u2060": "⟨U+2060⟩",
    "\ufeff": "⟨U+FEFF⟩", "\U000e0041": "⟨U+E0041⟩", "\u2028": "⟨U+2028⟩",
    "\u3164": "⟨U+3164⟩", "\u00ad": "⟨U+00AD⟩", "\udc80": "⟨U+DC80⟩",
}


@pytest.mark.parametrize("char", list(DANGEROUS))
def test_each_dangerous_character_is_shown_by_name_or_code(char: str) -> None:
    assert for_terminal(f"a{char}b") == f"a{DANGEROUS[char]}b"


def test_an_escape_sequence_is_inert_and_readable() -> None:
    assert for_terminal("x\x1b[2K\x1b[1Ay") == "x⟨ESC⟩[2K⟨ESC⟩[1Ay"
    assert (for_terminal("\x1b]8;;https://evil.example\x1b\\docs\x1b]8;;\x1b\\")
            == "⟨ESC⟩]8;;https://evil.example⟨ESC⟩\\docs⟨ESC⟩]8;;⟨ESC⟩\\")
    assert for_terminal("\x1b]52;c;Y3VybA==\x07") == "⟨ESC⟩]52;c;Y3VybA==⟨BEL⟩"


def test_ordinary_text_is_untouched() -> None:
    for text in ("def f(x):\n\treturn x  # ok\n", "café, naïve, Ελληνικά, русский, 日本語, עברית",
                 "emoji 👍 ✔️ 👨\u200d👩\u200d👧 #\ufe0f\u20e3", "می\u200cخواهم", "a\r\nb\r\n", ""):
        assert for_terminal(text) == text


def test_one_line_shows_newlines_and_tabs_too() -> None:
    assert for_terminal("a\nb\tc\r\n", one_line=True) == "a⟨LF⟩b⟨TAB⟩c⟨CR⟩⟨LF⟩"


def test_variation_selectors_smuggling_bytes_are_shown() -> None:
    assert for_terminal("a\ufe01\ufe02") == "a⟨U+FE01⟩⟨U+FE02⟩"
    assert for_terminal("✔\ufe0f\ufe0f") == "✔⟨U+FE0F⟩⟨U+FE0F⟩"


def test_random_text_keeps_every_character_or_shows_it() -> None:
    # No ZWJ: between two emoji it is kept, as emoji sequences need it.
    pool = [*(c for c in DANGEROUS if c != "\u200d"), "a", "Z", " ", "\n", "\t", "é", "日", "👍",
            "[", "]", "\\", "⟨"]
    rng = random.Random(46)
    for _ in range(2000):
        text = "".join(rng.choice(pool) for _ in range(rng.randrange(1, 30)))
        shown = for_terminal(text)
        assert FORBIDDEN.search(shown) is None, repr(text)
        assert for_terminal(shown) == shown  # idempotent
        plain = [c for c in text if c not in DANGEROUS or c == "\r"]
        assert all(c in shown for c in plain if c != "\r")  # nothing ordinary dropped
        assert shown.count("⟨") >= sum(c in DANGEROUS and c != "\r" for c in text)


def test_json_keeps_its_value_and_carries_nothing_raw() -> None:
    value = {"task": "x\x1b]0;t\x07 \u202etxt \U000e0041 é 日本 \x9b \x7f \udc80",
             "list": ["\u2066a\u2069", "\r", "ok"]}
    text = json_for_terminal(json.dumps(value, ensure_ascii=False))
    assert json.loads(text) == value
    assert FORBIDDEN.search(text) is None
    assert "é 日本" in text  # other non-ASCII stays readable


def test_a_ten_megabyte_diff_is_quick() -> None:
    line = "+    result = compute(values, weights)  # keep the order of the inputs\n"
    diff = line * (10_000_000 // len(line))
    start = time.perf_counter()
    assert for_terminal(diff) is diff
    plain_s = time.perf_counter() - start
    sprinkled = diff.replace("order", "ord\x1b[2Ker", 2000).replace("inputs", "inputs é", 5000)
    start = time.perf_counter()
    shown = for_terminal(sprinkled)
    sprinkled_s = time.perf_counter() - start
    assert shown.count("⟨ESC⟩") == 2000
    # Generous bounds for a shared machine; measured about 0.05 s and 0.3 s.
    assert plain_s < 0.5 and sprinkled_s < 5
