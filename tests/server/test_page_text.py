"""The web page shows controls, bidi overrides and invisible characters from repository or
model text as ⟨U+XXXX⟩, as the terminal does (its `visible` function, run in node)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

DOM_JS = Path(__file__).resolve().parents[2] / "src" / "codeloop" / "server" / "static" / "dom.js"
NODE = shutil.which("node")


def visible(texts: list[str]) -> list[str]:
    source = DOM_JS.read_text()
    found = re.search(r"^const HIDDEN = .*?^  `⟨U\+.*?\);$", source, re.S | re.M)
    assert found, "dom.js defines HIDDEN and visible"
    program = (found.group() + "\nconst input = JSON.parse(require('fs').readFileSync(0, 'utf8'));"
               "\nprocess.stdout.write(JSON.stringify(input.map(visible)));")
    assert NODE is not None
    out = subprocess.run([NODE, "-e", program], input=json.dumps(texts), capture_output=True,
                         text=True, check=True, timeout=30)
    return list(json.loads(out.stdout))


@pytest.mark.skipif(NODE is None, reason="node is not installed")
def test_the_page_shows_hidden_characters_and_keeps_ordinary_text() -> None:
    assert visible([
        'access = "user\u202e \u2066// admin\u2069 \u2066"',
        "erase\x1b[2K\x1b[1Aline\x07",
        "tag\U000e0041 zero\u200bwidth lone\rcr",
        "kept: café 日本 ✔\ufe0f 👨\u200d👩 a\r\nb\tc",
    ]) == [
        'access = "user⟨U+202E⟩ ⟨U+2066⟩// admin⟨U+2069⟩ ⟨U+2066⟩"',
        "erase⟨U+001B⟩[2K⟨U+001B⟩[1Aline⟨U+0007⟩",
        "tag⟨U+E0041⟩ zero⟨U+200B⟩width lone⟨U+000D⟩cr",
        "kept: café 日本 ✔\ufe0f 👨\u200d👩 a\r\nb\tc",
    ]
