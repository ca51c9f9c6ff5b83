from __future__ import annotations

from codeloop.index.chunks import MAX_CHUNK_LINES, chunk_lines
from codeloop.index.symbols import extract


def test_small_definitions_stay_whole_and_big_classes_split_by_method() -> None:
    methods = "".join(f"    def m{i}(self):\n" + "        x = 1\n" * 8 for i in range(12))
    source = "import os\n\n\nclass Big:\n" + methods + "\n\ndef small():\n    return 1\n"
    lines = source.splitlines()
    chunks = chunk_lines(lines, extract(source.encode(), "python").definitions)
    symbols = [c.symbol for c in chunks]
    assert symbols[0] == ""  # the import line
    assert symbols[1] == "Big"  # the class header
    assert [s for s in symbols if s.startswith("Big.")] == [f"Big.m{i}" for i in range(12)]
    assert symbols[-1] == "small"
    assert all(c.end_line - c.start_line < MAX_CHUNK_LINES for c in chunks)
    covered = {n for c in chunks for n in range(c.start_line, c.end_line + 1)}
    assert {n for n, line in enumerate(lines, 1) if line.strip()} <= covered


def test_runs_of_tiny_definitions_are_merged() -> None:
    source = "A = 1\nB = 2\nC = 3\n\n\ndef long_one():\n" + "    x = 1\n" * 10 + "\nD = 4\n"
    lines = source.splitlines()
    chunks = chunk_lines(lines, extract(source.encode(), "python").definitions)
    assert [(c.start_line, c.end_line, c.symbol) for c in chunks] == [
        (1, 3, ""), (6, 16, "long_one"), (18, 18, "D")]
