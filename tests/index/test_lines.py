"""Lines of files as the index serves them: split where asked, exactly as `splitlines`, and
not read again while the file's stat is the one it was hashed with."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from codeloop.index import lines as lines_module
from codeloop.index.analyse import decode
from codeloop.index.lines import FileLines, stat_key
from codeloop.index.service import RepoIndex


def samples() -> list[bytes]:
    fixed = [b"", b"\n", b"a", b"a\n", b"a\nb", b"a\n\nb\n\n", b"x\r\ny\rz", b"caf\xc3\xa9\nb",
             b"a\x0cb\x1c\n", b"bad\xff\nz", "a\u2028b\nc".encode()]
    rng = random.Random(5)
    alphabet = b"ab \n\n\n\r\x0b"
    return fixed + [bytes(rng.choice(alphabet) for _ in range(rng.randrange(30)))
                    for _ in range(500)]


@pytest.mark.parametrize("data", samples())
def test_file_lines_are_what_splitlines_gives(data: bytes) -> None:
    expected = decode(data).splitlines()
    got = FileLines(data)
    assert len(got) == len(expected) and list(got) == expected
    for first in range(-2, len(expected) + 2):
        for stop in range(-2, len(expected) + 2):
            assert got[first:stop] == expected[first:stop]
    for i in range(-len(expected), len(expected)):
        assert got[i] == expected[i]
    with pytest.raises(IndexError):
        got[len(expected)]


def test_a_file_written_just_now_is_not_trusted_by_its_stat(tmp_path: Path) -> None:
    path = tmp_path / "f.py"
    path.write_text("x = 1\n")
    assert stat_key(os.stat(path)) is None  # changed within the last second
    os.utime(path, (1, 1))  # an old modification time does not make it trusted either
    assert stat_key(os.stat(path)) is None


def test_an_edit_is_seen_even_when_stats_are_trusted_at_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lines_module, "_RACY_NS", 0)
    root = tmp_path / "repo"
    root.mkdir()
    target = root / "calc.py"
    target.write_text("def add(a, b):\n    return a + b\n")
    index = RepoIndex(root)
    index.update()
    assert index.read_lines("calc.py") == ["def add(a, b):", "    return a + b"]
    reads: list[str] = []
    real_read = index.fs.read_bytes

    def counted(rel: str, limit: int | None = None) -> bytes:
        reads.append(rel)
        return real_read(rel, limit)

    monkeypatch.setattr(index.fs, "read_bytes", counted)
    assert index.read_lines("calc.py") == ["def add(a, b):", "    return a + b"]
    assert reads == []  # the same stat: not read again
    target.write_text("def add(a, b):\n    return a - b\n")  # same size, new content
    os.utime(target, ns=(1, 1))
    assert index.read_lines("calc.py") == ["def add(a, b):", "    return a - b"]
    assert reads and index.find_symbol("add")[0].path == "calc.py"
    index.close()
