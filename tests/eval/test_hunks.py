from __future__ import annotations

import pytest

from codeloop.eval.swebench.hunks import GoldPatchError, plan_edits

BASE = "".join(f"line {n}\n" for n in range(1, 21)).replace("line 5\n", "same\n").replace(
    "line 15\n", "same\n")


def _apply(text: str, plans: list) -> str:  # type: ignore[type-arg]
    for edit in plans[0].edits:
        assert text.count(edit.old) == 1
        text = text.replace(edit.old, edit.new)
        assert text == edit.after
    return text


def test_one_edit_per_hunk_reproduces_the_patched_file() -> None:
    patch = """diff --git a/f.txt b/f.txt
--- a/f.txt
+++ b/f.txt
@@ -2,3 +2,4 @@
 line 2
 line 3
+inserted
 line 4
@@ -17,3 +18,3 @@
 line 17
-line 18
+changed 18
 line 19
"""
    plans = plan_edits(patch, lambda _p: BASE)
    assert [e.kind for e in plans[0].edits] == ["replace", "replace"]
    result = _apply(BASE, plans)
    assert "line 3\ninserted\nline 4\n" in result and "changed 18\n" in result
    assert result == plans[0].final


def test_ambiguous_hunks_are_widened_until_unique() -> None:
    # "same" occurs twice; a hunk quoting only it must take in neighbouring lines.
    patch = """diff --git a/f.txt b/f.txt
--- a/f.txt
+++ b/f.txt
@@ -15 +15 @@
-same
+fifteen
"""
    plans = plan_edits(patch, lambda _p: BASE)
    [edit] = plans[0].edits
    assert edit.old.count("\n") > 1 and "line 14" in edit.old
    assert _apply(BASE, plans).splitlines()[14] == "fifteen"


def test_offset_hunks_are_found_near_their_line_and_new_files_created() -> None:
    patch = """diff --git a/f.txt b/f.txt
--- a/f.txt
+++ b/f.txt
@@ -9,3 +9,3 @@
 line 11
-line 12
+twelve
 line 13
diff --git a/new.py b/new.py
new file mode 100644
--- /dev/null
+++ b/new.py
@@ -0,0 +1,2 @@
+x = 1
+y = 2
"""
    plans = plan_edits(patch, lambda p: BASE if p == "f.txt" else None)
    assert "twelve\n" in _apply(BASE, plans)
    assert plans[1].edits[0].kind == "create" and plans[1].edits[0].new == "x = 1\ny = 2\n"


def test_patch_for_a_missing_file_or_wrong_text_is_an_error() -> None:
    patch = "diff --git a/f.txt b/f.txt\n--- a/f.txt\n+++ b/f.txt\n@@ -1 +1 @@\n-nope\n+yes\n"
    with pytest.raises(GoldPatchError, match="not in the checkout"):
        plan_edits(patch, lambda _p: None)
    with pytest.raises(GoldPatchError, match="does not match"):
        plan_edits(patch, lambda _p: BASE)


def test_files_without_a_final_newline_keep_it_that_way() -> None:
    # git's own output for a file that ends without a newline, before and after.
    patch = ("diff --git a/x.h b/x.h\n--- a/x.h\n+++ b/x.h\n@@ -1,2 +1,3 @@\n a\n-b\n"
             "\\ No newline at end of file\n+c\n+d\n\\ No newline at end of file\n"
             "diff --git a/y.h b/y.h\nnew file mode 100644\n--- /dev/null\n+++ b/y.h\n"
             "@@ -0,0 +1 @@\n+z\n\\ No newline at end of file\n")
    plans = plan_edits(patch, {"x.h": "a\nb"}.get)
    assert plans[0].final == "a\nc\nd"
    assert plans[0].edits[0].old.endswith("b") and not plans[0].edits[0].old.endswith("\n")
    assert plans[1].final == "z"
