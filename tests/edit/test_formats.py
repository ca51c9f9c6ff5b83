from __future__ import annotations

import pytest

from codeloop.edit.errors import PatchFormatError
from codeloop.edit.formats import detect, parse_patch


def test_search_replace_blocks_for_several_files_and_a_new_one():
    patch = (
        "Here is the change.\n\n"
        "src/a.py\n```python\n<<<<<<< SEARCH\nx = 1\n=======\nx = 2\n>>>>>>> REPLACE\n```\n\n"
        "<<<<<<< SEARCH\ny = 1\n=======\ny = 2\n>>>>>>> REPLACE\n\n"
        "**src/new.py**\n<<<<<<< SEARCH\n=======\nprint('new')\n>>>>>>> REPLACE\n"
    )
    assert detect(patch) == "search_replace"
    ops = parse_patch(patch)
    assert [(o.path, o.kind, len(o.edits)) for o in ops] == [
        ("src/a.py", "update", 2), ("src/new.py", "create", 0)]
    assert ops[0].edits[1].search == "y = 1\n" and ops[1].content == "print('new')\n"


def test_search_replace_without_a_divider_is_an_error():
    with pytest.raises(PatchFormatError, match="======="):
        parse_patch("a.py\n<<<<<<< SEARCH\nx\n>>>>>>> REPLACE\n")


def test_unified_diff_with_bare_hunk_headers_and_lost_spaces():
    patch = "--- a/m.py\n+++ b/m.py\n@@\n def f():\n-    return 1\n+    return 2\n\n@@ ... @@\n x\n-y\n+z\n"
    [op] = parse_patch(patch)
    assert op.path == "m.py" and len(op.edits) == 2
    assert op.edits[0].search == "def f():\n    return 1\n"
    assert op.edits[0].hint_line is None


def test_unified_diff_keeps_numbers_and_section_as_hints():
    [op] = parse_patch("diff --git a/p.py b/p.py\n--- a/p.py\n+++ b/p.py\n"
                       "@@ -10,3 +10,3 @@ def g():\n a\n-b\n+c\n d\n")
    edit = op.edits[0]
    assert (edit.hint_line, edit.anchors) == (10, ("def g():",))


def test_unified_diff_without_file_headers_uses_the_default_path():
    [op] = parse_patch("@@ -1 +1 @@\n-a\n+b\n", default_path="x.txt")
    assert op.path == "x.txt" and op.edits[0].replace == "b\n"
    with pytest.raises(PatchFormatError, match="which file"):
        parse_patch("@@ -1 +1 @@\n-a\n+b\n")


def test_unified_diff_hunk_without_header_and_new_and_deleted_files():
    ops = parse_patch(
        "--- a/k.py\n+++ b/k.py\n-old\n+new\n"
        "--- /dev/null\n+++ b/n.py\n@@ -0,0 +1,2 @@\n+one\n+two\n"
        "--- a/d.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-gone\n"
    )
    assert [(o.path, o.kind) for o in ops] == [("k.py", "update"), ("n.py", "create"), ("d.py", "delete")]
    assert ops[1].content == "one\ntwo\n"


def test_deleted_line_that_looks_like_a_header_stays_in_the_hunk():
    [op] = parse_patch("--- a/q.sql\n+++ b/q.sql\n@@ -1,2 +1,1 @@\n--- comment\n select 1\n")
    assert op.edits[0].search == "-- comment\nselect 1\n"


def test_envelope_with_nested_anchors_and_end_of_file():
    patch = (
        "*** Begin Patch\n*** Update File: a.py\n@@ class A:\n@@     def f(self):\n"
        "-        return 1\n+        return 2\n*** End of File\n*** End Patch\n"
    )
    [op] = parse_patch(patch)
    edit = op.edits[0]
    assert edit.anchors == ("class A:", "def f(self):") and edit.at_eof
    assert detect(patch) == "envelope"


def test_unknown_format_is_refused():
    with pytest.raises(PatchFormatError, match="format"):
        parse_patch("please change x to y")
