from __future__ import annotations

import pytest

from codeloop.edit.apply import FileOp, plan
from codeloop.edit.errors import EditError, NoMatch, NotTextFile
from codeloop.edit.matching import Edit
from codeloop.edit.textfile import decode, encode


def _roundtrip(data: bytes, search: str, replace: str) -> bytes:
    changes = plan([FileOp("f", "update", (Edit(search, replace),))], lambda _p: data)
    after = changes[0].after
    assert after is not None
    return after


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (b"a\r\nb\r\nc\r\n", b"a\r\nB\r\nx\r\nc\r\n"),  # CRLF stays CRLF
        (b"\xef\xbb\xbfa\nb\nc\n", b"\xef\xbb\xbfa\nB\nx\nc\n"),  # UTF-8 BOM kept
        (b"a\nb\nc", b"a\nB\nx\nc"),  # no trailing newline stays so
        ("a\nb\nc\n".encode("utf-16"), "a\nB\nx\nc\n".encode("utf-16")),  # UTF-16 with BOM
        ("é\nb\nc\n".encode("cp1252"), "é\nB\nx\nc\n".encode("cp1252")),  # legacy encoding
        (b"\ta\nb\n\tc\n", b"\ta\nB\nx\n\tc\n"),  # tabs untouched
    ],
)
def test_file_form_is_preserved(before, after):
    assert _roundtrip(before, "b\n", "B\nx\n") == after


def test_mixed_line_endings_are_left_alone_outside_the_edit():
    data = b"a\r\nb\nc\r\n"
    assert _roundtrip(data, "b\n", "B\n") == b"a\r\nB\nc\r\n"


def test_binary_and_oversize_files_are_refused():
    with pytest.raises(NotTextFile, match="binary"):
        decode(b"\x00\x01abc", "img.png")
    with pytest.raises(NotTextFile, match="limit"):
        decode(b"x" * 50, "big.txt", max_bytes=10)


def test_unencodable_replacement_is_refused_with_the_character():
    tf = decode("é\n".encode("cp1252"))
    with pytest.raises(NotTextFile, match="cp1252"):
        encode("€ ok ☃\n", tf)


def test_failing_second_edit_leaves_everything_untouched():
    data = b"one\ntwo\nthree\n"
    edits = (Edit("one\n", "1\n"), Edit("nine\n", "9\n"))
    with pytest.raises(NoMatch) as err:
        plan([FileOp("f", "update", edits)], lambda _p: data)
    assert "edit 2 of 2" in err.value.message and "no edit was applied" in err.value.message


def test_multi_file_ops_validate_before_anything_is_returned():
    files = {"a": b"x\n", "b": b"y\n"}
    ops = [FileOp("a", "update", (Edit("x\n", "X\n"),)), FileOp("c", "update", (Edit("q\n", "Q\n"),))]
    with pytest.raises(EditError, match="does not exist"):
        plan(ops, files.get)


def test_hints_shift_with_earlier_edits():
    text = "".join(f"k = {i % 3}\n" for i in range(30)).encode()
    ops = [FileOp("f", "update", (
        Edit("k = 0\n", "k = 0\nextra\nextra\n", hint_line=1),
        Edit("k = 0\n", "k = zero\n", hint_line=28),
    ))]
    after = plan(ops, lambda _p: text)[0].after
    assert after is not None
    lines = after.decode().splitlines()
    assert lines[:3] == ["k = 0", "extra", "extra"] and lines[29] == "k = zero"


def test_create_and_delete():
    changes = plan([FileOp("new.py", "create", content="x\n"), FileOp("old.py", "delete")],
                   {"old.py": b"gone\n"}.get)
    assert [(c.path, c.before, c.after) for c in changes] == [
        ("new.py", None, b"x\n"), ("old.py", b"gone\n", None)]
